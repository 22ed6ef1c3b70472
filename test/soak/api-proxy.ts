// One operator replica's road to the API server: a loopback HTTP proxy the
// replica talks plain HTTP to, which forwards each request over TLS with the
// cluster's credentials. Seeing requests (not just bytes) is the point: it
// records every write the replica sends, with the time it reached the API
// server, so the soak can compare writes with the Lease holder. It also cuts
// the road: blackhole (nothing moves, nothing answers), reset (connections
// dropped and refused) and delay (every request held back first).
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { KubeConfig } from '../../src/runtime/kubeconfig.ts';
import type { WriteRecord } from './invariants.ts';
import type { PartitionMode } from './schedule.ts';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export class ApiProxy {
  readonly writes: WriteRecord[] = [];
  /** Watches the API server answered 410 Gone (a compacted resourceVersion), as status or ERROR event. */
  gone = 0;
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  /** Upstream answers being streamed (watches): paused by a blackhole. */
  private readonly streams = new Set<http.IncomingMessage>();
  private mode: PartitionMode | undefined;
  private delayMs = 0;
  private readonly upstream: URL;
  private readonly tls: https.RequestOptions;
  port = 0;

  readonly replica: string;

  private constructor(replica: string, upstream: string, tls: https.RequestOptions) {
    this.replica = replica;
    this.upstream = new URL(upstream);
    this.tls = tls;
    this.server = http.createServer((req, res) => this.forward(req, res));
    this.server.on('connection', (s) => {
      if (this.mode === 'reset') {
        s.destroy();
        return;
      }
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  static async start(replica: string, kc: KubeConfig): Promise<ApiProxy> {
    const tls: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    const p = new ApiProxy(replica, kc.getCurrentCluster()!.server, tls);
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    p.port = (p.server.address() as { port: number }).port;
    return p;
  }

  /** A kubeconfig (YAML is JSON) naming this proxy, without credentials: the proxy adds them. */
  kubeconfig(): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'soak', cluster: { server: `http://127.0.0.1:${this.port}` } }],
      users: [{ name: 'soak', user: {} }],
      contexts: [{ name: 'soak', context: { cluster: 'soak', user: 'soak' } }],
      'current-context': 'soak',
    });
  }

  partition(mode: PartitionMode, delayMs = 3_000): void {
    this.mode = mode;
    this.delayMs = delayMs;
    if (mode === 'reset') this.dropAll();
    if (mode === 'blackhole') for (const s of this.streams) s.pause();
  }

  /** Heals the partition; whatever a blackhole held is dropped, as a timed-out connection would be. */
  heal(): void {
    const was = this.mode;
    this.mode = undefined;
    if (was === 'blackhole') this.dropAll();
  }

  async close(): Promise<void> {
    this.dropAll();
    await new Promise((r) => this.server.close(r));
  }

  private dropAll(): void {
    for (const s of this.streams) s.destroy();
    for (const s of this.sockets) s.destroy();
  }

  private async forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (this.mode === 'blackhole') return; // never forwarded, never answered
    if (this.mode === 'delay') await new Promise((r) => setTimeout(r, this.delayMs));
    // The mode may have changed while the request waited.
    const now = this.mode as PartitionMode | undefined;
    if (now === 'blackhole' || now === 'reset' || req.socket.destroyed) return;
    const method = req.method ?? 'GET';
    const write: WriteRecord | undefined = WRITES.has(method)
      ? { at: Date.now(), replica: this.replica, method, path: req.url ?? '/' }
      : undefined;
    if (write) this.writes.push(write);
    const headers = { ...req.headers, host: this.upstream.host };
    const up = https.request(
      {
        ...this.tls,
        hostname: this.upstream.hostname,
        port: this.upstream.port,
        method,
        path: req.url,
        headers,
      },
      (answer) => {
        if (write && answer.statusCode !== undefined) write.status = answer.statusCode;
        this.streams.add(answer);
        answer.on('close', () => {
          this.streams.delete(answer);
          // Cut off upstream (an API server restart): the replica must see its stream end, not hang.
          if (!answer.complete) res.destroy();
        });
        if (this.mode === 'blackhole') answer.pause();
        if (req.url?.includes('watch=')) {
          if (answer.statusCode === 410) this.gone++;
          answer.on('data', (chunk: Buffer) => {
            if (chunk.includes('"code":410')) this.gone++;
          });
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    up.end(Buffer.concat(chunks));
  }
}
