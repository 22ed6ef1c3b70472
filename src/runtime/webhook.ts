// An HTTPS server for admission webhooks (admission.k8s.io/v1 AdmissionReview):
// one handler per path, the request's uid echoed back, a failing handler turned
// into a denial with code 500 whose message the user sees, certificates
// swapped without a restart, and controller-runtime's webhook metric names.
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { CertKeyPair } from './certs.ts';
import { HttpError, readJsonBody } from './http.ts';
import { listen } from './listen.ts';
import { type Logger, rootLogger } from './log.ts';
import { registry } from './metrics.ts';
import type { K8sObject } from './resources.ts';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** admission.k8s.io/v1 AdmissionRequest, as the API server sends it. */
export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  requestKind?: GroupVersionKind;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: K8sObject | null;
  oldObject?: K8sObject | null;
  dryRun?: boolean;
  options?: unknown;
}

/** A handler's verdict. A denial without a code is 403 Forbidden, as controller-runtime's Denied. */
export interface AdmissionResult {
  allowed: boolean;
  message?: string;
  code?: number;
  reason?: string;
  warnings?: string[];
}

export type AdmissionHandler = (req: AdmissionRequest) => Promise<AdmissionResult> | AdmissionResult;

export interface WebhookServerOptions {
  /** host:port or :port (all interfaces); default ':9443', controller-runtime's port. */
  bindAddress?: string;
  /** The serving pair; replace it later with setCertificate. */
  tls: CertKeyPair;
  /** Larger request bodies are refused with 413 (default 3 MiB, the API server's own object limit). */
  maxBodyBytes?: number;
  log?: Logger;
}

const requests = new Counter({
  name: 'controller_runtime_webhook_requests_total',
  help: 'Total number of admission requests by HTTP status code.',
  labelNames: ['webhook', 'code'] as const,
  registers: [registry],
});
const latency = new Histogram({
  name: 'controller_runtime_webhook_latency_seconds',
  help: 'Histogram of the latency of processing admission requests',
  labelNames: ['webhook'] as const,
  registers: [registry],
});
const inFlight = new Gauge({
  name: 'controller_runtime_webhook_requests_in_flight',
  help: 'Current number of admission requests being served.',
  labelNames: ['webhook'] as const,
  registers: [registry],
});

const MiB = 1024 * 1024;

export class WebhookServer {
  private readonly opts: WebhookServerOptions;
  private readonly log: Logger;
  private readonly handlers = new Map<string, AdmissionHandler>();
  private readonly server: https.Server;
  private listening = false;

  constructor(opts: WebhookServerOptions) {
    this.opts = opts;
    this.log = (opts.log ?? rootLogger).child({ component: 'webhook' });
    this.server = https.createServer(
      { cert: opts.tls.cert, key: opts.tls.key, minVersion: 'TLSv1.2' },
      (req, res) => void this.serve(req, res),
    );
    // The API server gives a webhook 10-30 s; never hold a socket much longer.
    this.server.requestTimeout = 60_000;
  }

  /** Serves `handler` at `path` (e.g. /validate-...); register before or after start. */
  register(path: string, handler: AdmissionHandler): void {
    if (!path.startsWith('/')) throw new Error(`webhook path "${path}" must start with /`);
    if (path === '/healthz' || this.handlers.has(path)) throw new Error(`webhook path ${path} already taken`);
    this.handlers.set(path, handler);
  }

  /** Replaces the serving certificate; new connections get it, open ones keep theirs. */
  setCertificate(pair: CertKeyPair): void {
    this.server.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' });
  }

  async start(): Promise<void> {
    await listen(this.server, this.opts.bindAddress ?? ':9443', 'webhooks');
    this.listening = true;
    this.log.info({ address: this.address(), paths: [...this.handlers.keys()] }, 'serving webhooks');
  }

  /** Stops accepting, lets in-flight reviews finish (up to `graceMs`), then closes every socket. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    const timer = setTimeout(() => this.server.closeAllConnections(), graceMs);
    await closed;
    clearTimeout(timer);
  }

  address(): AddressInfo | undefined {
    const a = this.server.address();
    return a && typeof a === 'object' ? a : undefined;
  }

  private async serve(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    const handler = this.handlers.get(path);
    if (!handler) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    const start = performance.now();
    inFlight.inc({ webhook: path });
    let code = 200;
    try {
      const review = await this.readReview(req);
      const response = await this.decide(path, handler, review);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
    } catch (err) {
      code = err instanceof HttpError ? err.status : 500;
      if (!res.headersSent) res.writeHead(code, { 'content-type': 'text/plain', connection: 'close' });
      res.end(err instanceof Error ? err.message : String(err));
    } finally {
      inFlight.dec({ webhook: path });
      requests.inc({ webhook: path, code: String(code) });
      latency.observe({ webhook: path }, (performance.now() - start) / 1000);
    }
  }

  private async readReview(req: IncomingMessage): Promise<AdmissionRequest> {
    if (req.method !== 'POST') throw new HttpError(405, `method ${req.method} not allowed`);
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('application/json'))
      throw new HttpError(415, `content type ${type}, want application/json`);
    const review = (await readJsonBody(req, this.opts.maxBodyBytes ?? 3 * MiB)) as
      | { apiVersion?: string; kind?: string; request?: AdmissionRequest }
      | undefined;
    if (
      review?.kind !== 'AdmissionReview' ||
      review.apiVersion !== 'admission.k8s.io/v1' ||
      !review.request?.uid
    )
      throw new HttpError(400, 'want an admission.k8s.io/v1 AdmissionReview with a request uid');
    return review.request;
  }

  private async decide(path: string, handler: AdmissionHandler, req: AdmissionRequest) {
    let r: AdmissionResult;
    try {
      r = await handler(req);
    } catch (err) {
      this.log.error({ err, webhook: path, uid: req.uid }, 'webhook handler failed');
      r = {
        allowed: false,
        code: 500,
        message: `internal error: ${err instanceof Error ? err.message : String(err)}`,
      };
    }
    const code = r.code ?? (r.allowed ? 200 : 403);
    const status =
      r.message || r.code || !r.allowed
        ? {
            code,
            ...(r.message ? { message: r.message } : {}),
            ...(r.reason || code === 403 ? { reason: r.reason ?? 'Forbidden' } : {}),
          }
        : undefined;
    return {
      uid: req.uid,
      allowed: r.allowed,
      ...(status ? { status } : {}),
      ...(r.warnings?.length ? { warnings: r.warnings } : {}),
    };
  }
}
