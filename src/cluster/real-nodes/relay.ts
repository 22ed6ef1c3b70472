// Relays between a real node's network namespaces and the host's loopback, in
// one Node process for every connection (socat's `fork` cost ~2.5 MiB per
// connection, 95 MiB with two nodes). A unix socket is a file, so it crosses
// network namespaces: one relay on the host turns api.sock into the API
// server's 127.0.0.1 port; one in the cluster namespace turns 172.30.0.1:<port>
// into api.sock, and serves the API server's egress selector an HTTP CONNECT
// proxy on cluster.sock that dials kubelets and pods.
import { lstatSync, unlinkSync } from 'node:fs';
import { createServer, connect as dial, type NetConnectOpts, type Server, type Socket } from 'node:net';

/** One side of a relay: a unix socket's path, or a TCP address. */
export type Endpoint = { unix: string } | { host: string; port: number };

/** A listening relay. */
export interface Relay {
  /** Where it listens; a TCP port asked as 0 is the one given. */
  readonly address: Endpoint;
  /** Client connections open now (each with its target's, once dialled). */
  readonly connections: number;
  /** Stops listening, removes its unix socket and destroys every open connection. */
  close(): Promise<void>;
}

/** `unix:/path` or `tcp:host:port` (`tcp:[::1]:6443` for IPv6), as the relay command takes them. */
export function parseEndpoint(text: string): Endpoint {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length);
    if (!path.startsWith('/')) throw new Error(`"${text}": a unix socket needs an absolute path`);
    return { unix: path };
  }
  const tcp = /^tcp:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d+)$/.exec(text);
  const port = Number(tcp?.[3]);
  if (!tcp || !(port >= 0 && port < 65536))
    throw new Error(`"${text}" is neither unix:/PATH nor tcp:HOST:PORT`);
  return { host: (tcp[1] ?? tcp[2])!, port };
}

export function formatEndpoint(e: Endpoint): string {
  return 'unix' in e ? `unix:${e.unix}` : `tcp:${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`;
}

const dialOptions = (e: Endpoint): NetConnectOpts =>
  'unix' in e ? { path: e.unix, allowHalfOpen: true } : { host: e.host, port: e.port, allowHalfOpen: true };

/**
 * Joins a client and its target both ways. An end on one side ends the other's
 * write side only (half-close: a client may send all, shut down, then read the
 * answer), and each closes once both its directions are done; an error on
 * either destroys both, and so does one destroyed before it ended its reading
 * (by close(), say).
 */
export function splice(client: Socket, target: Socket): void {
  const both = () => {
    client.destroy();
    target.destroy();
  };
  client.on('error', both);
  target.on('error', both);
  // A side that closed without its peer's end having reached the other side was cut off:
  // nothing more will come from it. After a clean end the other side finishes by itself.
  client.on('close', () => target.writableEnded || target.destroy());
  target.on('close', () => client.writableEnded || client.destroy());
  client.pipe(target);
  target.pipe(client);
}

/** Listens on `listen` and relays each connection to a new connection to `target`. */
export function forward(opts: { listen: Endpoint; target: Endpoint }): Promise<Relay> {
  return serve(opts.listen, (client, track) => {
    const target = track(dial(dialOptions(opts.target)));
    splice(client, target);
  });
}

/**
 * Accepts on `listen` and hands each client to `onClient`, which may `track` the
 * sockets it opens for it; close() destroys every socket still open. Only clients
 * are counted.
 */
async function serve(
  listen: Endpoint,
  onClient: (client: Socket, track: (s: Socket) => Socket) => void,
): Promise<Relay> {
  const clients = new Set<Socket>();
  const all = new Set<Socket>();
  const track = (s: Socket) => {
    all.add(s);
    s.on('close', () => all.delete(s));
    return s;
  };
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    clients.add(client);
    client.on('close', () => clients.delete(client));
    onClient(track(client), track);
  });
  if ('unix' in listen) await removeStaleSocket(listen.unix);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if ('unix' in listen) server.listen(listen.unix, done);
    else server.listen(listen.port, listen.host, done);
  });
  const bound = server.address();
  return {
    address:
      bound !== null && typeof bound === 'object' && 'host' in listen
        ? { ...listen, port: bound.port }
        : listen,
    get connections() {
      return clients.size;
    },
    close: () =>
      new Promise<void>((resolve) => {
        // libuv unlinks a unix listener's path when it closes.
        server.close(() => resolve());
        for (const s of all) s.destroy();
      }),
  };
}

/**
 * A unix socket left by a relay that was killed refuses connections; remove it so
 * listen() can bind. One that answers belongs to a live relay and is not taken over,
 * and a path that is not a socket is never removed.
 */
async function removeStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw new Error(`${path} exists and is not a unix socket`);
  const live = await new Promise<boolean>((resolve) => {
    const probe = dial({ path });
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`${path} is in use by a running process`);
  unlinkSync(path);
}

// ---- HTTP CONNECT ----

/** The request head may not grow past this before its blank line (Go's default is 1 MiB; ours are tiny). */
const MAX_HEAD = 16 * 1024;

export interface ConnectProxyOptions {
  listen: Endpoint;
  /** Whether a target may be dialled; every target when absent. */
  allow?: (host: string, port: number) => boolean;
  /** How long a dial may take before the client is answered 504. Default 10 s. */
  dialTimeoutMs?: number;
}

/**
 * An HTTP/1.1 CONNECT proxy, as the API server's egress selector speaks it
 * (`proxyProtocol: HTTPConnect`): `CONNECT host:port HTTP/1.1` and headers, then
 * `200 Connection established` and raw bytes both ways. Bytes sent after the
 * request head, before the answer, go to the target first.
 */
export function connectProxy(opts: ConnectProxyOptions): Promise<Relay> {
  return serve(opts.listen, (client, track) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEAD) answer(client, 431, 'request head too large');
        return;
      }
      client.off('data', onData);
      client.off('end', onEarlyEnd);
      client.pause();
      const request = parseConnectRequest(head.subarray(0, end).toString('latin1'));
      tunnel(client, request, head.subarray(end + 4), { ...opts, track });
    };
    const onEarlyEnd = () => client.destroy();
    client.on('data', onData);
    client.on('end', onEarlyEnd);
    client.on('error', () => client.destroy());
  });
}

/** What the request line asks, or the status to refuse it with. */
export type ConnectRequest =
  | { host: string; port: number }
  | { status: 400 | 405 | 505; reason: string; method?: string };

/** Reads the request line of a head (`CONNECT host:port HTTP/1.1`); the headers are not needed. */
export function parseConnectRequest(head: string): ConnectRequest {
  const line = head.split('\r\n', 1)[0] ?? '';
  const parts = /^([A-Z]+) (\S+) HTTP\/(\d\.\d)$/.exec(line);
  if (!parts) return { status: 400, reason: `malformed request line "${line.slice(0, 100)}"` };
  const [, method = '', target = '', version] = parts;
  if (version !== '1.1' && version !== '1.0')
    return { status: 505, reason: `HTTP/${version} is not spoken here` };
  if (method !== 'CONNECT') return { status: 405, reason: `${method}: only CONNECT is served`, method };
  const authority = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]/]+)):(\d{1,5})$/.exec(target);
  const port = Number(authority?.[3]);
  if (!authority || !(port > 0 && port < 65536))
    return { status: 400, reason: `"${target.slice(0, 100)}" is not host:port` };
  return { host: (authority[1] ?? authority[2])!, port };
}

interface Dialling extends ConnectProxyOptions {
  track: (s: Socket) => Socket;
}

function tunnel(client: Socket, req: ConnectRequest, early: Buffer, opts: Dialling): void {
  if ('status' in req) {
    answer(client, req.status, req.reason, req.status === 405 ? { Allow: 'CONNECT' } : {});
    return;
  }
  const where = `${req.host}:${req.port}`;
  if (opts.allow && !opts.allow(req.host, req.port)) {
    answer(client, 403, `${where} may not be dialled through this proxy`);
    return;
  }
  const timeoutMs = opts.dialTimeoutMs ?? 10_000;
  const target = opts.track(dial({ host: req.host, port: req.port, allowHalfOpen: true }));
  const stop = () => {
    clearTimeout(timer);
    target.off('error', failed);
    client.off('close', gone);
  };
  const timer = setTimeout(() => {
    stop();
    target.destroy();
    answer(client, 504, `dialling ${where} took longer than ${timeoutMs} ms`);
  }, timeoutMs);
  const failed = (err: Error) => {
    stop();
    answer(client, 502, `dialling ${where}: ${err.message}`);
  };
  // The client may leave while we dial.
  const gone = () => {
    stop();
    target.destroy();
  };
  target.once('error', failed);
  client.once('close', gone);
  target.once('connect', () => {
    stop();
    client.write('HTTP/1.1 200 Connection established\r\n\r\n');
    if (early.length) target.write(early);
    splice(client, target);
  });
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  405: 'Method Not Allowed',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
};

/** A refusal with a one-line body, then the connection closed. */
function answer(client: Socket, status: number, body: string, headers: Record<string, string> = {}): void {
  if (client.destroyed) return;
  const text = `${body}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  client.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
  // Closing with unread bytes would reset the connection and could lose the answer:
  // read and drop the rest until the client ends, for a few seconds at most.
  client.removeAllListeners('data');
  client.on('end', () => client.destroy());
  client.resume();
  setTimeout(() => client.destroy(), 5_000).unref();
}
