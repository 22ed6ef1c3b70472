// The manager owns what controllers share — one client, one cache, one
// metrics registry, probes, leader election — and their lifecycle: caches sync
// first (then /readyz turns green), controllers run only while we lead, and a
// shutdown stops taking work, lets in-flight reconciles finish within a bound,
// releases the lease and closes the servers.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControllerBuilder } from './builder.ts';
import { SharedCache } from './cache.ts';
import { KubeClient, type KubeClientOptions } from './client.ts';
import type { Controller } from './controller.ts';
import { EventRecorder } from './events.ts';
import type { ControllerHost } from './host.ts';
import type { KubeConfigSource as KubeConfig } from './kubeconfig.ts';
import { LeaderElector } from './leader.ts';
import { listen } from './listen.ts';
import { type Logger, rootLogger } from './log.ts';
import { registry } from './metrics.ts';
import { MetricsAuthFilter } from './metrics-auth.ts';
import { metricsCertificate } from './metrics-tls.ts';

export interface ManagerOptions {
  kubeConfig: KubeConfig;
  client?: KubeClientOptions;
  /** This process's name in leases and events; default <hostname>_<uuid>, as controller-runtime. */
  identity?: string;
  leaderElection?: {
    enabled: boolean;
    namespace: string;
    name: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** host:port or :port for /metrics; '0' turns it off. */
  metricsBindAddress?: string;
  /**
   * Serve /metrics over HTTPS to callers the API server authenticates
   * (TokenReview) and authorizes (SubjectAccessReview, non-resource URL
   * /metrics); absent means plain HTTP to anyone who can connect.
   */
  metricsSecure?: {
    /** tls.crt and tls.key, reloaded on change; without it a self-signed pair is minted at start. */
    certDir?: string;
    /** How long review answers are reused (default 10 s). */
    reviewCacheTtlMs?: number;
  };
  /** host:port or :port for /healthz and /readyz; '0' turns it off. */
  healthProbeBindAddress?: string;
  /** How long in-flight reconciles may take to finish at shutdown (default 30 s). */
  gracefulShutdownMs?: number;
  /** Informer watchdog (re-watch after this long without an event or bookmark). */
  watchdogMs?: number;
  /** How long a replica that took the lease waits for its cache to list afresh (default 30 s). */
  catchUpTimeoutMs?: number;
  /** While kinds the API server does not serve keep the caches from syncing, say so this often (default 30 s). */
  missingKindsReportMs?: number;
  log?: Logger;
}

/** Runs controllers; hands their setup functions only the ControllerHost view of itself. */
export class Manager implements ControllerHost {
  readonly client: KubeClient;
  readonly cache: SharedCache;
  readonly identity: string;
  readonly log: Logger;
  private readonly opts: ManagerOptions;
  private readonly controllers: Controller[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly servers: Server[] = [];
  private readonly stopOnClose: (() => void)[] = [];
  private readonly bound = new Map<'metrics' | 'health', AddressInfo>();
  private synced = false;
  private elector: LeaderElector | undefined;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.log = opts.log ?? rootLogger;
    this.identity = opts.identity ?? `${hostname()}_${randomUUID()}`;
    this.client = KubeClient.fromKubeConfig(opts.kubeConfig, opts.client);
    this.cache = new SharedCache(this.client, {
      watchdogMs: opts.watchdogMs,
      onError: (err, informer) => this.log.warn({ err, informer }, 'informer error; retrying'),
    });
  }

  /** Starts wiring a controller: mgr.controller('name').for(Kind).owns(...).complete(reconcile). */
  controller(name: string): ControllerBuilder {
    if (this.controllers.some((c) => c.name === name))
      throw new Error(`controller "${name}" registered twice`);
    return new ControllerBuilder(this, name);
  }

  /** Called by the builder. */
  add(controller: Controller): void {
    this.controllers.push(controller);
  }

  eventRecorder(controller: string): EventRecorder {
    const r = new EventRecorder(this.client, { controller, instance: this.identity, log: this.log });
    this.recorders.push(r);
    return r;
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.synced;
  }

  /** The address a server actually bound (useful with port 0). */
  address(server: 'metrics' | 'health'): AddressInfo | undefined {
    return this.bound.get(server);
  }

  /**
   * Runs until `signal` aborts (clean stop) or leadership is lost (throws, so
   * the process exits and restarts clean, as controller-runtime does).
   */
  async start(signal: AbortSignal): Promise<void> {
    await this.serve('health', this.opts.healthProbeBindAddress, (path) => this.probe(path));
    await this.serve(
      'metrics',
      this.opts.metricsBindAddress,
      async (path) =>
        path === '/metrics'
          ? { code: 200, body: await registry.metrics(), type: registry.contentType }
          : undefined,
      this.opts.metricsSecure,
    );
    let lost = false;
    // Said once soon after start, then at a calm interval while it lasts.
    const sayMissing = () => {
      const { missing } = this.cache.unsynced();
      if (missing.length)
        this.log.error(
          { missing },
          `the API server does not serve ${missing.join(', ')}: their CustomResourceDefinitions are not installed; waiting for them`,
        );
    };
    // unref: a report due must never keep a stopping process alive.
    const first = setTimeout(sayMissing, 2000).unref();
    const again = setInterval(sayMissing, this.opts.missingKindsReportMs ?? 30_000).unref();
    try {
      this.cache.start();
      await this.cache.waitForSync(signal).finally(() => {
        clearTimeout(first);
        clearInterval(again);
      });
      this.synced = true;
      this.log.info({ controllers: this.controllers.map((c) => c.name) }, 'caches synced');

      const le = this.opts.leaderElection;
      if (le?.enabled) {
        // Its own client, as controller-runtime's: the renewals must not queue
        // behind the controllers' requests in a shared rate limiter, nor be fenced.
        const leaseClient = KubeClient.fromKubeConfig(this.opts.kubeConfig, {
          ...this.opts.client,
          userAgent: `${this.opts.client?.userAgent ?? 'nodewarden'}/leader-election`,
        });
        this.stopOnClose.push(() => leaseClient.close());
        this.elector = new LeaderElector(leaseClient, { ...le, identity: this.identity, log: this.log });
        this.log.info({ lease: `${le.namespace}/${le.name}` }, 'waiting for leadership');
        lost =
          (await this.elector.run(signal, (leaderSignal) => {
            // Lost, not stopped: nothing begun while leading may land now (another
            // replica may lead), and there is no graceful shutdown to wait for,
            // as controller-runtime skips it when the lease is lost.
            leaderSignal.addEventListener('abort', () => {
              if (!signal.aborted) this.client.fenceWrites('leader election lost');
            });
            return this.leadWithFreshCache(leaderSignal, () => !signal.aborted);
          })) === 'lost';
      } else {
        await this.runControllers(signal);
      }
    } finally {
      await Promise.all(this.recorders.map((r) => r.flush()));
      await this.cache.stop();
      await Promise.all(this.servers.map((s) => new Promise((r) => s.close(r))));
      this.servers.length = 0;
      for (const stop of this.stopOnClose.splice(0)) stop();
      this.client.close();
    }
    if (lost) throw new Error('leader election lost');
  }

  /**
   * What a replica does on taking the lease: its cache lists everything afresh first (its watches
   * may have been cut by a partition it has not noticed yet), then the controllers run.
   */
  private async leadWithFreshCache(signal: AbortSignal, lost: () => boolean): Promise<void> {
    const started = performance.now();
    const limitMs = this.opts.catchUpTimeoutMs ?? 30_000;
    // WHY a limit: lists refused for good (RBAC taken away) would hold the lease with nothing done.
    const timedOut = await Promise.race([
      this.cache.catchUp(signal).then(() => false),
      sleep(limitMs, true, { signal, ref: false }),
    ]).catch((err: unknown) => (signal.aborted ? undefined : Promise.reject(err)));
    if (timedOut === undefined) return;
    const ms = Math.round(performance.now() - started);
    if (timedOut) this.log.warn({ ms }, 'cache not caught up in time; starting controllers on it as it is');
    else this.log.info({ ms }, 'cache caught up; starting controllers');
    return this.runControllers(signal, lost);
  }

  /** Runs the controllers until `signal` aborts; when `lost()` says so, without a graceful shutdown. */
  private async runControllers(signal: AbortSignal, lost = () => false): Promise<void> {
    for (const c of this.controllers) c.start();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.log.info('stopping controllers');
    const grace = lost() ? 0 : (this.opts.gracefulShutdownMs ?? 30_000);
    await Promise.all(this.controllers.map((c) => c.stop(grace)));
  }

  private async probe(path: string) {
    if (path === '/healthz' || path === '/livez') return { code: 200, body: 'ok' };
    if (path === '/readyz')
      return this.synced ? { code: 200, body: 'ok' } : { code: 503, body: this.notReady() };
    return undefined;
  }

  /** Why /readyz is not ok: which kinds are not synced, and which of them the API server does not serve. */
  private notReady(): string {
    const { waiting, missing } = this.cache.unsynced();
    const lines = ['caches not synced'];
    if (missing.length) lines.push(`not served by the API server (CRD not installed): ${missing.join(', ')}`);
    if (waiting.length) lines.push(`still listing: ${waiting.join(', ')}`);
    return lines.join('\n');
  }

  private async serve(
    which: 'metrics' | 'health',
    address: string | undefined,
    handle: (path: string) => Promise<{ code: number; body: string; type?: string } | undefined>,
    secure?: ManagerOptions['metricsSecure'],
  ): Promise<void> {
    if (!address || address === '0') return;
    // Secure: every request passes the API server's review before it is answered.
    const auth = secure
      ? new MetricsAuthFilter(this.client, { cacheTtlMs: secure.reviewCacheTtlMs, log: this.log })
      : undefined;
    const guarded = async (req: IncomingMessage, path: string) => {
      if (!auth) return handle(path);
      const v = await auth.check(req.headers.authorization, req.method ?? 'GET', path);
      return v.allowed ? handle(path) : { code: v.code, body: v.message };
    };
    const listener: RequestListener = (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      guarded(req, path).then(
        (r) => {
          res.writeHead(r?.code ?? 404, { 'content-type': r?.type ?? 'text/plain; charset=utf-8' });
          res.end(r?.body ?? 'not found');
        },
        (err: unknown) => {
          res.writeHead(500);
          res.end(String(err));
        },
      );
    };
    let server: Server;
    if (secure) {
      const tls = metricsCertificate({
        certDir: secure.certDir,
        onChange: (pair) => https.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2' }),
        log: this.log,
      });
      const https = createHttpsServer(
        { cert: tls.pair.cert, key: tls.pair.key, minVersion: 'TLSv1.2' },
        listener,
      );
      if (tls.watcher) this.stopOnClose.push(() => tls.watcher?.stop());
      server = https;
    } else server = createServer(listener);
    const bound = await listen(server, address, which);
    this.bound.set(which, bound);
    this.servers.push(server);
    this.log.info(
      { address: bound, scheme: secure ? 'https' : 'http', authorization: secure ? 'kubernetes' : 'none' },
      `serving ${which}`,
    );
  }
}
