// A small Kubernetes REST client on node:http(s). The kubeconfig (TLS material,
// token/exec credentials) is read by ./kubeconfig.ts, not client-node, whose import
// alone costs ~85 MiB RSS; requests, retries, rate limiting and watch streaming are
// ours, on plain JSON objects.
import { readFileSync } from 'node:fs';
import type * as Http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, isAlreadyExists, isGone, isNotFound, type StatusCause } from './errors.ts';
import type { KubeConfigSource } from './kubeconfig.ts';
import { backoffDelay, TokenBucket } from './ratelimit.ts';
import {
  apiVersionOf,
  type DeleteOptions,
  type K8sObject,
  type ListOptions,
  type ObjectList,
  type PatchOptions,
  type PatchType,
  Pods,
  type ResourceType,
  resourcePath,
  type WatchEvent,
  type WatchOptions,
} from './resources.ts';

// node:http taken as the CommonJS module, not imported: an ESM import of it builds a
// facade that reads every export, and its WebSocket and friends' getters load
// undici (~10 ms of every command's start). Node's own lazy getters stay lazy so.
const http = process.getBuiltinModule('node:http') as typeof Http;

export interface KubeClientOptions {
  qps?: number;
  burst?: number;
  userAgent?: string;
  fieldManager?: string;
  impersonate?: { user: string; groups?: string[] };
  maxRetries?: number;
  /** First retry delay; doubles per attempt up to retryMaxMs, with jitter. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Socket inactivity limit for non-watch requests. */
  requestTimeoutMs?: number;
  /**
   * Fenced whenever this client is: a client for another cluster (a KVM workload
   * cluster's) that acts for the leader must stop writing when the leader does.
   */
  fencedWith?: KubeClient;
}

/**
 * Where every client reports its requests. The operator's metrics (src/runtime/metrics.ts)
 * plug in when loaded; a command never loads them, and so never prom-client (~0.06 s and
 * ~9 MiB of its start-up), as client-go's metrics are registered by whoever wants them.
 */
export interface RequestObserver {
  answered(labels: { method: string; host: string; code: string }): void;
  latency(labels: { verb: string; host: string }, seconds: number): void;
}
let observer: RequestObserver | undefined;
export function observeRequests(o: RequestObserver): void {
  observer = o;
}

export interface RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** false: never retry, whatever the error (eviction must surface every 429). */
  retry?: boolean;
  signal?: AbortSignal;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  // JSON is valid YAML, so an apply body can stay JSON.
  apply: 'application/apply-patch+yaml',
};

// The request never reached a server, so even a POST is safe to resend.
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);
// The connection broke mid-request: the server may have acted on it.
const BROKEN = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);
const RETRY_STATUS = new Set([500, 502, 503, 504]);
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

interface Status {
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes?: StatusCause[]; retryAfterSeconds?: number };
}

/** Builds an ApiError from a metav1.Status (from a response body or a watch ERROR event). */
export function statusError(code: number, status: Status | undefined, fallback: string, retryAfter?: number) {
  const causes = status?.details?.causes ?? [];
  let message = status?.message || fallback;
  // Some Status messages (eviction) leave the useful part, e.g. the PDB's name, to the causes.
  const extra = causes.map((c) => c.message).filter((m): m is string => !!m && !message.includes(m));
  if (extra.length > 0) message += ` (${extra.join('; ')})`;
  const retryAfterSeconds = retryAfter ?? status?.details?.retryAfterSeconds;
  return new ApiError(status?.code ?? code, message, { reason: status?.reason, causes, retryAfterSeconds });
}

export class KubeClient {
  readonly server: URL;
  readonly fieldManager: string;
  private readonly kc: KubeConfigSource;
  private readonly opts: KubeClientOptions;
  private readonly limiter: TokenBucket;
  private readonly maxRetries: number;
  private fence: Error | undefined;
  private readonly writesUnderWay = new Set<AbortController>();
  /** Clients created `fencedWith` this one. */
  private readonly followers = new Set<KubeClient>();
  private init: Promise<void> | undefined;
  private agent: Http.Agent | undefined;
  // Headers for credentials that never change (token, client cert, basic).
  private staticAuth: Record<string, string> | undefined;
  private dynamicAuth: { h: Record<string, string>; at: number } | undefined;

  private constructor(kc: KubeConfigSource, server: string, opts: KubeClientOptions) {
    this.kc = kc;
    this.server = new URL(server);
    this.opts = opts;
    this.fieldManager = opts.fieldManager ?? 'nodewarden';
    this.limiter = new TokenBucket(opts.qps ?? 50, opts.burst ?? 100);
    this.maxRetries = opts.maxRetries ?? 5;
    const leader = opts.fencedWith;
    if (leader?.fence) this.fence = leader.fence;
    leader?.followers.add(this);
  }

  static fromKubeConfig(kc: KubeConfigSource, opts: KubeClientOptions = {}): KubeClient {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error(`kubeconfig context "${kc.getCurrentContext()}" names no cluster`);
    return new KubeClient(kc, cluster.server, opts);
  }

  /** Closes pooled keep-alive sockets. */
  close(): void {
    this.agent?.destroy();
    this.opts.fencedWith?.followers.delete(this);
  }

  // Resolves TLS material once and builds the single keep-alive agent every
  // request shares (client-node's Watch made a new agent per reconnect and leaked sockets).
  private setup(): Promise<void> {
    this.init ??= (async () => {
      const cluster = this.kc.getCurrentCluster();
      const user = this.kc.getCurrentUser();
      const o: https.RequestOptions = {};
      await this.kc.applyToHTTPSOptions(o);
      // client-node skips the cluster CA when the context has no user.
      if (o.ca === undefined && cluster?.caFile) o.ca = readFileSync(cluster.caFile);
      if (o.ca === undefined && cluster?.caData) o.ca = Buffer.from(cluster.caData, 'base64');
      if (cluster?.proxyUrl && o.agent instanceof http.Agent) {
        // client-node builds (and caches per cluster/user) the proxy agent.
        this.agent = o.agent;
      } else if (this.server.protocol === 'https:') {
        const tls: https.AgentOptions = { keepAlive: true, keepAliveMsecs: 30_000, timeout: 60_000 };
        for (const k of TLS_KEYS) if (o[k] !== undefined) Object.assign(tls, { [k]: o[k] });
        this.agent = new https.Agent(tls);
      } else {
        this.agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 30_000, timeout: 60_000 });
      }
      if (!user?.exec && !user?.authProvider) this.staticAuth = headersOf(o);
    })();
    return this.init;
  }

  private async headers(): Promise<Record<string, string | string[]>> {
    await this.setup();
    let auth = this.staticAuth;
    if (!auth && this.dynamicAuth && performance.now() - this.dynamicAuth.at < 1000)
      auth = this.dynamicAuth.h;
    if (!auth) {
      // exec/auth-provider credentials expire and client-node's authenticators refresh them, but each
      // call also re-reads the CA and cert files (in-cluster: every request), so reuse it for a second.
      const o: https.RequestOptions = {};
      await this.kc.applyToHTTPSOptions(o);
      auth = headersOf(o);
      this.dynamicAuth = { h: auth, at: performance.now() };
    }
    const h: Record<string, string | string[]> = {
      ...auth,
      Accept: 'application/json',
      'User-Agent': this.opts.userAgent ?? `nodewarden (node ${process.version})`,
    };
    if (this.opts.impersonate) {
      h['Impersonate-User'] = this.opts.impersonate.user;
      if (this.opts.impersonate.groups?.length) h['Impersonate-Group'] = this.opts.impersonate.groups;
    }
    return h;
  }

  // One HTTP exchange, resolving when response headers arrive.
  private async open(o: RequestOptions, watch: boolean): Promise<Http.IncomingMessage> {
    const headers = await this.headers();
    const url = new URL(o.path, this.server);
    for (const [k, v] of Object.entries(o.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    let payload: Buffer | undefined;
    if (o.body !== undefined) {
      payload = Buffer.from(typeof o.body === 'string' ? o.body : JSON.stringify(o.body));
      headers['Content-Type'] = o.contentType ?? 'application/json';
      headers['Content-Length'] = String(payload.length);
    }
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { method: o.method, headers, agent: this.agent, signal: o.signal });
      if (!watch) {
        const ms = this.opts.requestTimeoutMs ?? 60_000;
        req.setTimeout(ms, () =>
          req.destroy(Object.assign(new Error(`no answer in ${ms}ms`), { code: 'ETIMEDOUT' })),
        );
      }
      req.on('response', resolve);
      req.on('error', reject);
      req.end(payload);
    });
  }

  private async once(o: RequestOptions): Promise<unknown> {
    const start = performance.now();
    const labels = { method: o.method, host: this.server.host };
    let res: Http.IncomingMessage;
    try {
      res = await this.open(o, false);
    } catch (err) {
      observer?.answered({ ...labels, code: '<error>' });
      throw err;
    }
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const code = res.statusCode ?? 0;
    observer?.answered({ ...labels, code: String(code) });
    observer?.latency({ verb: o.method, host: this.server.host }, (performance.now() - start) / 1000);
    if (code >= 200 && code < 300) return text ? JSON.parse(text) : undefined;
    const status = parseStatus(text);
    const ra = Number.parseInt(String(res.headers['retry-after'] ?? ''), 10);
    const fallback = `${o.method} ${o.path}: HTTP ${code}${text && !status ? `: ${text.slice(0, 200)}` : ''}`;
    throw statusError(code, status, fallback, Number.isNaN(ra) ? undefined : ra);
  }

  /** Delay before retrying `err`, or undefined when it must not be retried. */
  private retryDelay(o: RequestOptions, err: unknown, attempt: number): number | undefined {
    if (o.retry === false || attempt >= this.maxRetries || o.signal?.aborted) return undefined;
    const backoff = backoffDelay(attempt, this.opts.retryBaseMs ?? 200, this.opts.retryMaxMs ?? 10_000);
    if (err instanceof ApiError) {
      const after =
        err.retryAfterSeconds !== undefined ? Math.min(err.retryAfterSeconds, 60) * 1000 : backoff;
      // 429 means the server (priority & fairness) refused the request unprocessed: safe for any verb.
      if (err.statusCode === 429) return after;
      if (RETRY_STATUS.has(err.statusCode) && o.method !== 'POST') return after;
      return undefined; // 409 and friends are the caller's business
    }
    const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
    if (NOT_SENT.has(code)) return backoff;
    if ((BROKEN.has(code) || /socket hang up/.test(String(err))) && o.method !== 'POST') return backoff;
    return undefined;
  }

  /**
   * Stops every write for good, those under way included: a leader that lost its
   * lease must not act again, not even by retrying a write it began while it led
   * (another replica may lead by then). client-go leaves this to os.Exit; the
   * operator exits too, but a retry can land before the process is gone.
   */
  fenceWrites(reason: string): void {
    this.fence ??= Object.assign(new Error(`writes fenced: ${reason}`), { code: 'EFENCED' });
    for (const ctl of this.writesUnderWay) ctl.abort(this.fence);
    for (const f of this.followers) f.fenceWrites(reason);
  }

  /**
   * Throws the fence, if writes are fenced: for changes made elsewhere on this client's
   * authority (a cloud's API), which a lost leader must not make either.
   */
  assertMayWrite(): void {
    if (this.fence) throw this.fence;
  }

  /** Raw request: rate-limited and retried by the rules above; returns the parsed JSON body. */
  async request<R = unknown>(o: RequestOptions): Promise<R> {
    if (o.method === 'GET') return this.attempts<R>(o);
    if (this.fence) throw this.fence; // writes only: reads go on
    const ctl = new AbortController();
    this.writesUnderWay.add(ctl);
    try {
      return await this.attempts<R>({
        ...o,
        signal: o.signal ? AbortSignal.any([o.signal, ctl.signal]) : ctl.signal,
      });
    } finally {
      this.writesUnderWay.delete(ctl);
    }
  }

  /** The fence, if it stops this request. */
  private fenced(o: RequestOptions): Error | undefined {
    return o.method === 'GET' ? undefined : this.fence;
  }

  private async attempts<R>(o: RequestOptions): Promise<R> {
    for (let attempt = 0; ; attempt++) {
      await this.limiter.take(o.signal);
      try {
        return (await this.once(o)) as R;
      } catch (err) {
        const fence = this.fenced(o);
        const delay = fence ? undefined : this.retryDelay(o, err, attempt);
        if (delay === undefined) throw fence ?? err;
        // A fence set while we wait aborts the wait: say so, not "aborted".
        await sleep(delay, undefined, { signal: o.signal }).catch((e) => {
          throw this.fenced(o) ?? e;
        });
      }
    }
  }

  async get<T = K8sObject>(
    type: ResourceType,
    name: string,
    namespace?: string,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.request<T>({ method: 'GET', path: resourcePath(type, namespace, name), signal });
  }

  async list<T = K8sObject>(type: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const { namespace, signal, ...q } = opts;
    const list = await this.request<{ items?: T[] | null; metadata?: ObjectList<T>['metadata'] }>({
      method: 'GET',
      path: resourcePath(type, namespace),
      query: { ...q },
      signal,
    });
    // List items come without apiVersion/kind; fill them so objects can be applied back as-is.
    const items = (list.items ?? []).map((i) => ({ apiVersion: apiVersionOf(type), kind: type.kind, ...i }));
    return {
      items,
      metadata: {
        resourceVersion: list.metadata?.resourceVersion ?? '',
        continue: list.metadata?.continue || undefined,
      },
    };
  }

  /** Lists every page (limit 500 unless given) of one consistent snapshot. */
  async listAll<T = K8sObject>(
    type: ResourceType,
    opts: Omit<ListOptions, 'continue'> = {},
  ): Promise<ObjectList<T>> {
    const items: T[] = [];
    let page: ObjectList<T> | undefined;
    let cont: string | undefined;
    do {
      try {
        page = await this.list<T>(type, { limit: 500, ...opts, continue: cont });
      } catch (err) {
        // The continue token expired (410): fall back to one unpaginated list, as client-go's pager does.
        if (!cont || !isGone(err)) throw err;
        return this.list<T>(type, { ...opts, limit: undefined });
      }
      items.push(...page.items);
      cont = page.metadata.continue;
    } while (cont);
    return { items, metadata: { resourceVersion: page.metadata.resourceVersion } };
  }

  async create<T = K8sObject>(
    type: ResourceType,
    obj: T & K8sObject,
    opts: { dryRun?: boolean; signal?: AbortSignal } = {},
  ): Promise<T> {
    return this.request<T>({
      method: 'POST',
      path: resourcePath(type, obj.metadata?.namespace),
      query: { fieldManager: this.fieldManager, dryRun: opts.dryRun ? 'All' : undefined },
      body: withTypeMeta(type, obj),
      signal: opts.signal,
    });
  }

  /** Creates the object unless one of that name exists; true if this call created it. */
  async createIfAbsent(type: ResourceType, obj: K8sObject): Promise<boolean> {
    try {
      await this.create(type, obj);
      return true;
    } catch (err) {
      if (isAlreadyExists(err)) return false;
      throw err;
    }
  }

  async update<T = K8sObject>(type: ResourceType, obj: T & K8sObject, signal?: AbortSignal): Promise<T> {
    return this.put(type, obj, undefined, signal);
  }

  async updateStatus<T = K8sObject>(type: ResourceType, obj: T & K8sObject): Promise<T> {
    return this.put(type, obj, 'status');
  }

  private async put<T>(
    type: ResourceType,
    obj: T & K8sObject,
    sub: string | undefined,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.request<T>({
      method: 'PUT',
      path: resourcePath(type, obj.metadata?.namespace, obj.metadata?.name ?? '', sub),
      query: { fieldManager: this.fieldManager },
      body: withTypeMeta(type, obj),
      signal,
    });
  }

  /** Patches an object; `apply` is server-side apply and always sends a fieldManager. */
  async patch<T = K8sObject>(
    type: ResourceType,
    name: string,
    namespace: string | undefined,
    body: unknown,
    opts: PatchOptions,
  ): Promise<T> {
    const apply = opts.type === 'apply';
    return this.request<T>({
      method: 'PATCH',
      path: resourcePath(type, namespace, name, opts.subresource),
      query: {
        fieldManager: opts.fieldManager ?? this.fieldManager,
        force: apply && opts.force !== undefined ? opts.force : undefined,
        dryRun: opts.dryRun ? 'All' : undefined,
      },
      // Apply needs apiVersion/kind in the body; forgetting them is a common 400.
      body: apply ? withTypeMeta(type, body as K8sObject) : body,
      contentType: PATCH_CONTENT_TYPES[opts.type],
    });
  }

  async delete(
    type: ResourceType,
    name: string,
    namespace?: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    // JSON drops the options left undefined.
    const { gracePeriodSeconds, propagationPolicy, preconditions } = opts;
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      gracePeriodSeconds,
      propagationPolicy,
      preconditions,
    };
    try {
      await this.request({
        method: 'DELETE',
        path: resourcePath(type, namespace, name),
        query: { dryRun: opts.dryRun ? 'All' : undefined },
        body,
      });
    } catch (err) {
      if (!(opts.ignoreNotFound && isNotFound(err))) throw err;
    }
  }

  /**
   * Evicts a pod through the Eviction API. A PDB refusal is ApiError 429 (500 if
   * several PDBs match); it is never retried here, the caller decides.
   */
  async evict(
    podName: string,
    namespace: string,
    opts: { gracePeriodSeconds?: number; dryRun?: boolean } = {},
  ): Promise<void> {
    const deleteOptions = {
      gracePeriodSeconds: opts.gracePeriodSeconds,
      dryRun: opts.dryRun ? ['All'] : undefined,
    };
    await this.request({
      method: 'POST',
      path: resourcePath(Pods, namespace, podName, 'eviction'),
      body: {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: podName, namespace },
        deleteOptions,
      },
      retry: false,
    });
  }

  /**
   * Streams watch events. Not rate-limited and never retried (the informer owns
   * recovery). Ends when the server closes the stream or `signal` aborts; a
   * broken connection throws.
   */
  async *watch<T = K8sObject>(type: ResourceType, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const o: RequestOptions = {
      method: 'GET',
      path: resourcePath(type, opts.namespace),
      query: {
        watch: 'true',
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks ?? true,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        timeoutSeconds: opts.timeoutSeconds,
      },
      signal: opts.signal,
    };
    let res: Http.IncomingMessage;
    try {
      res = await this.open(o, true);
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    }
    observer?.answered({ method: 'GET', host: this.server.host, code: String(res.statusCode) });
    try {
      if (res.statusCode !== 200) {
        let text = '';
        for await (const c of res) text += c;
        throw statusError(res.statusCode ?? 0, parseStatus(text), `watch ${o.path}: HTTP ${res.statusCode}`);
      }
      res.setEncoding('utf8');
      let buf = '';
      for await (const chunk of res) {
        buf += chunk as string;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line) yield JSON.parse(line) as WatchEvent<T>;
        }
      }
      if (buf.trim()) yield JSON.parse(buf) as WatchEvent<T>;
    } catch (err) {
      if (opts.signal?.aborted) return;
      throw err;
    } finally {
      res.destroy();
    }
  }
}

function parseStatus(text: string): Status | undefined {
  try {
    return JSON.parse(text) as Status;
  } catch {
    return undefined;
  }
}

function headersOf(o: https.RequestOptions): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) h[k] = String(v);
  if (o.auth) h.Authorization = `Basic ${Buffer.from(o.auth).toString('base64')}`;
  return h;
}

function withTypeMeta<T extends K8sObject>(type: ResourceType, obj: T): T {
  return { ...obj, apiVersion: obj.apiVersion ?? apiVersionOf(type), kind: obj.kind ?? type.kind };
}
