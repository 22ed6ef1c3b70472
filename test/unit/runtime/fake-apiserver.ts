// A loopback stand-in for the Kubernetes API server, just big enough for the
// runtime's unit tests: CRUD, list with pagination, watch with bookmarks, and
// knobs to inject the failures real clusters produce (410, abrupt close,
// silent stall, 429/503).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient, type KubeClientOptions } from '../../../src/runtime/client.ts';
import { matchesSelector } from '../../../src/runtime/label-selector.ts';
import { apiVersionOf, type K8sObject, type ResourceType } from '../../../src/runtime/resources.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  /** CN of the client certificate, when served over TLS. */
  clientCN?: string;
}

interface Watcher {
  res: http.ServerResponse;
  plural: string;
  namespace: string | undefined;
  selector: string;
  bookmarks: boolean;
  stalled: boolean;
}

interface Failure {
  count: number;
  code: number;
  retryAfter?: number;
  method?: string;
  /** Only requests whose URL contains this. */
  path?: string;
}

type Route = { plural: string; namespace?: string; name?: string; sub?: string };

const status = (code: number, reason: string, message: string, causes?: unknown[]) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message,
  ...(causes ? { details: { causes } } : {}),
});

export class FakeApiServer {
  readonly requests: RecordedRequest[] = [];
  /** TCP connections accepted: shows whether clients reuse keep-alive sockets. */
  connections = 0;
  /** Watches from a resourceVersion older than this get 410 Gone. */
  minRV = 0;
  /** How an expired watch is refused: an HTTP 410, or (as real servers mostly do) a 200 with an ERROR event. */
  goneAs: 'http' | 'event' = 'event';
  /** Status the eviction subresource answers instead of evicting. */
  evictionRefusal: ReturnType<typeof status> | undefined;
  /** While true, requests are read and recorded but never answered (a partition that swallows them). */
  blackhole = false;
  /** Every answer held back this long first (a slow road to the server). */
  delayMs = 0;
  private rv = 1;
  private readonly objects = new Map<string, K8sObject>();
  private readonly log: { rv: number; plural: string; type: string; object: K8sObject }[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly failures: Failure[] = [];
  private readonly server: http.Server;

  private constructor(server: http.Server) {
    this.server = server;
    server.on('request', (req, res) => void this.serve(req, res));
    server.on('connection', () => this.connections++);
  }

  /** Starts on 127.0.0.1 at a random port; with `tls`, over HTTPS requiring a client certificate signed by `ca`. */
  static async start(opts: { tls?: { key: Buffer; cert: Buffer; ca: Buffer }; port?: number } = {}) {
    const { tls } = opts;
    const server = tls
      ? https.createServer({ ...tls, requestCert: true, rejectUnauthorized: true })
      : http.createServer();
    const fake = new FakeApiServer(server);
    await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
    return fake;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `${this.server instanceof https.Server ? 'https' : 'http'}://127.0.0.1:${port}`;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
      currentContext: 'c',
    });
    return kc;
  }

  async stop(): Promise<void> {
    for (const w of this.watchers) w.res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  get resourceVersion(): number {
    return this.rv;
  }
  get openWatches(): number {
    return this.watchers.size;
  }

  /** The next `count` requests (of `method`, if given) fail with `code`. */
  failNext(
    count: number,
    code: number,
    opts: { retryAfter?: number; method?: string; path?: string } = {},
  ): void {
    this.failures.push({ count, code, ...opts });
  }

  /** Stores (creating or replacing) an object as if a client wrote it, and notifies watchers. */
  upsert(type: ResourceType, obj: K8sObject): K8sObject {
    const key = this.key(type.plural, obj.metadata?.namespace, obj.metadata?.name);
    const old = this.objects.get(key);
    const stored: K8sObject = structuredClone({ apiVersion: apiVersionOf(type), kind: type.kind, ...obj });
    stored.metadata = {
      ...stored.metadata,
      uid: old?.metadata?.uid ?? randomUUID(),
      creationTimestamp: old?.metadata?.creationTimestamp ?? new Date().toISOString(),
      resourceVersion: String(++this.rv),
      managedFields: [{ manager: 'fake', operation: 'Update', apiVersion: 'v1' }],
    };
    this.objects.set(key, stored);
    this.emit(type.plural, old ? 'MODIFIED' : 'ADDED', stored);
    return structuredClone(stored);
  }

  remove(type: ResourceType, name: string, namespace?: string): void {
    const key = this.key(type.plural, namespace, name);
    const old = this.objects.get(key);
    if (!old) return;
    this.objects.delete(key);
    this.emit(type.plural, 'DELETED', {
      ...old,
      metadata: { ...old.metadata, resourceVersion: String(++this.rv) },
    });
  }

  get(type: ResourceType, name: string, namespace?: string): K8sObject | undefined {
    return this.objects.get(this.key(type.plural, namespace, name));
  }

  /** The stored objects of a type (in a namespace, matching a label selector), as an informer's cache holds them. */
  stored(type: ResourceType, opts: { namespace?: string; labelSelector?: string } = {}): K8sObject[] {
    const w = { plural: type.plural, namespace: opts.namespace, selector: opts.labelSelector ?? '' };
    return [...this.objects.entries()]
      .filter(([k, o]) => k.startsWith(`${type.plural}/`) && this.matches(w, type.plural, o))
      .map(([, o]) => structuredClone(o));
  }

  /** Forget history: watches from any resourceVersion before now get 410. */
  expire(): void {
    this.minRV = this.rv;
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for them. */
  bookmark(): void {
    for (const w of this.watchers) {
      if (w.bookmarks && !w.stalled && !w.res.writableEnded) {
        const object = { kind: 'Bookmark', metadata: { resourceVersion: String(this.rv) } };
        w.res.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
      }
    }
  }

  /** Drops every open watch connection without ending the HTTP response (a reset). */
  closeWatchesAbruptly(): void {
    for (const w of this.watchers) w.res.socket?.destroy();
  }

  /** Ends every open watch cleanly, as the server's timeoutSeconds does. */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
  }

  /** Open watches stay connected but never receive anything again (a half-open TCP stream). */
  stallWatches(): void {
    for (const w of this.watchers) w.stalled = true;
  }

  private key(plural: string, ns: string | undefined, name: string | undefined): string {
    return `${plural}/${ns ?? ''}/${name ?? ''}`;
  }

  private emit(plural: string, type: string, object: K8sObject): void {
    const rv = Number(object.metadata?.resourceVersion);
    this.log.push({ rv, plural, type, object });
    for (const w of this.watchers) {
      if (!w.stalled && !w.res.writableEnded && this.matches(w, plural, object))
        w.res.write(`${JSON.stringify({ type, object })}\n`);
    }
  }

  private matches(
    w: Pick<Watcher, 'plural' | 'namespace' | 'selector'>,
    plural: string,
    o: K8sObject,
  ): boolean {
    if (w.plural !== plural) return false;
    if (w.namespace && o.metadata?.namespace !== w.namespace) return false;
    return matchesSelector(o.metadata?.labels, w.selector);
  }

  private route(path: string): Route | undefined {
    const m = path.match(/^\/(?:api\/v1|apis\/[^/]+\/[^/]+)\/(.*)$/);
    if (!m) return undefined;
    const seg = m[1]!.split('/').filter(Boolean).map(decodeURIComponent);
    if (seg[0] === 'namespaces' && seg.length >= 3) {
      return { namespace: seg[1], plural: seg[2]!, name: seg[3], sub: seg[4] };
    }
    return { plural: seg[0]!, name: seg[1], sub: seg[2] };
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    let text = '';
    for await (const c of req) text += c;
    const body = text ? JSON.parse(text) : undefined;
    const rec: RecordedRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body,
    };
    if (req.socket && 'getPeerCertificate' in req.socket) {
      rec.clientCN = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN);
    }
    this.requests.push(rec);
    if (this.blackhole) return;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const send = (code: number, obj: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
      res.end(JSON.stringify(obj));
    };
    const fail = this.failures.find(
      (f) =>
        f.count > 0 &&
        (!f.method || f.method === req.method) &&
        (!f.path || (req.url ?? '').includes(f.path)),
    );
    if (fail) {
      fail.count--;
      const headers: Record<string, string> =
        fail.retryAfter !== undefined ? { 'Retry-After': String(fail.retryAfter) } : {};
      return send(
        fail.code,
        status(fail.code, fail.code === 429 ? 'TooManyRequests' : 'ServiceUnavailable', 'injected'),
        headers,
      );
    }
    const r = this.route(url.pathname);
    if (!r) return send(404, status(404, 'NotFound', `no route ${url.pathname}`));
    const key = this.key(r.plural, r.namespace, r.name);
    const type = { group: '', version: 'v1', kind: '', plural: r.plural, namespaced: !!r.namespace };
    const existing = this.objects.get(key);
    const notFound = () => send(404, status(404, 'NotFound', `${r.plural} "${r.name}" not found`));
    const q = url.searchParams;
    switch (req.method) {
      case 'GET':
        if (q.get('watch') === 'true') return this.watch(r, q, res);
        if (r.name) return existing ? send(200, existing) : notFound();
        return this.list(r, q, send);
      case 'POST': {
        if (r.sub === 'eviction') {
          if (this.evictionRefusal) return send(this.evictionRefusal.code, this.evictionRefusal);
          if (!existing) return notFound();
          this.remove({ ...type, kind: 'Pod' }, r.name!, r.namespace);
          return send(201, { kind: 'Status', apiVersion: 'v1', status: 'Success', code: 201 });
        }
        const name = body?.metadata?.name;
        if (this.objects.has(this.key(r.plural, r.namespace, name))) {
          return send(409, status(409, 'AlreadyExists', `${r.plural} "${name}" already exists`));
        }
        if (q.get('dryRun') === 'All') return send(201, body);
        return send(201, this.upsert({ ...type, kind: body.kind }, body));
      }
      case 'PUT': {
        if (!existing) return notFound();
        const want = body?.metadata?.resourceVersion;
        if (want && want !== existing.metadata?.resourceVersion) {
          return send(
            409,
            status(409, 'Conflict', 'the object has been modified; please apply your changes'),
          );
        }
        const next = r.sub === 'status' ? { ...existing, status: body.status } : body;
        return send(200, this.upsert({ ...type, kind: existing.kind ?? '' }, next));
      }
      case 'PATCH': {
        if (!existing && !String(req.headers['content-type']).includes('apply-patch')) return notFound();
        const next = Array.isArray(body) ? existing : mergePatch(existing ?? {}, body);
        return send(200, this.upsert({ ...type, kind: next?.kind ?? '' }, next ?? {}));
      }
      case 'DELETE': {
        if (!existing) return notFound();
        const pre = body?.preconditions ?? {};
        if (
          (pre.uid && pre.uid !== existing.metadata?.uid) ||
          (pre.resourceVersion && pre.resourceVersion !== existing.metadata?.resourceVersion)
        ) {
          return send(409, status(409, 'Conflict', 'Precondition failed'));
        }
        this.remove(type, r.name!, r.namespace);
        return send(200, existing);
      }
    }
    send(405, status(405, 'MethodNotAllowed', req.method ?? ''));
  }

  private list(r: Route, q: URLSearchParams, send: (code: number, obj: unknown) => void): void {
    const w = { plural: r.plural, namespace: r.namespace, selector: q.get('labelSelector') ?? '' };
    const all = [...this.objects.entries()]
      .filter(([k]) => k.startsWith(`${r.plural}/`))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, o]) => o)
      .filter((o) => this.matches(w, r.plural, o));
    const token = q.get('continue');
    const start = token
      ? (JSON.parse(Buffer.from(token, 'base64').toString()) as { offset: number }).offset
      : 0;
    const limit = Number(q.get('limit') ?? 0) || all.length;
    const page = all.slice(start, start + limit);
    const more = start + limit < all.length;
    send(200, {
      kind: 'List',
      apiVersion: 'v1',
      metadata: {
        resourceVersion: String(this.rv),
        ...(more
          ? { continue: Buffer.from(JSON.stringify({ offset: start + limit })).toString('base64') }
          : {}),
      },
      // Like the real server: list items carry no apiVersion/kind.
      items: page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest),
    });
  }

  private watch(r: Route, q: URLSearchParams, res: http.ServerResponse): void {
    const from = Number(q.get('resourceVersion') || 0);
    const expired = status(410, 'Expired', `too old resource version: ${from} (${this.minRV})`);
    if (from && from < this.minRV && this.goneAs === 'http') {
      res.writeHead(410, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(expired));
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (from && from < this.minRV) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: expired })}\n`);
      return;
    }
    const w: Watcher = {
      res,
      plural: r.plural,
      namespace: r.namespace,
      selector: q.get('labelSelector') ?? '',
      bookmarks: q.get('allowWatchBookmarks') === 'true',
      stalled: false,
    };
    for (const e of this.log) {
      if (e.rv > from && this.matches(w, e.plural, e.object))
        res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    }
    this.watchers.add(w);
    const timeout = Number(q.get('timeoutSeconds') ?? 0);
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    res.on('close', () => {
      clearTimeout(timer);
      this.watchers.delete(w);
    });
  }
}

// RFC 7386 merge patch, which is also close enough to apply/strategic for these tests.
function mergePatch(target: K8sObject, patch: Record<string, unknown>): K8sObject {
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof out[k] === 'object' && out[k] !== null) {
      out[k] = mergePatch(out[k] as K8sObject, v as Record<string, unknown>);
    } else out[k] = v;
  }
  return out as K8sObject;
}

/** A fresh fake API server and a client of it (unthrottled) for each test of the suite it is called in. */
export function useFakeApiServer(clientOpts: KubeClientOptions = {}): {
  fake: FakeApiServer;
  client: KubeClient;
} {
  const t = {} as { fake: FakeApiServer; client: KubeClient };
  beforeEach(async () => {
    t.fake = await FakeApiServer.start();
    t.client = KubeClient.fromKubeConfig(t.fake.kubeConfig(), { qps: 0, ...clientOpts });
  });
  afterEach(async () => {
    t.client.close();
    await t.fake.stop();
  });
  return t;
}

/** Waits until `cond` holds, polling every 5 ms; fails the test after `ms`. */
export async function until(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
