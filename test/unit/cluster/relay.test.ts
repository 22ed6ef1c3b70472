import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  connectProxy,
  type Endpoint,
  forward,
  parseConnectRequest,
  parseEndpoint,
  type Relay,
} from '../../../src/cluster/real-nodes/relay.ts';
import { allowList, parseRelayArgs } from '../../../src/cluster/real-nodes/relay-command.ts';

const BIN = join(import.meta.dirname, '../../../bin/nodewarden');

let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'nw-relay-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

// ---- a few servers to relay to, on loopback ----

async function listen(server: Server, at: Endpoint = { host: '127.0.0.1', port: 0 }): Promise<number> {
  await new Promise<void>((r) =>
    'unix' in at ? server.listen(at.unix, r) : server.listen(at.port, at.host, r),
  );
  const a = server.address();
  return typeof a === 'object' && a ? a.port : 0;
}
const closeServer = (s: Server) => new Promise((r) => s.close(r));

/** Echoes every byte, and ends its side when the client ends its own. */
async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer({ allowHalfOpen: true }, (s) => s.pipe(s));
  return { server, port: await listen(server) };
}

/** A port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await closeServer(s);
  return port;
}

function dialTo(e: Endpoint): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({
      ...('unix' in e ? { path: e.unix } : { host: e.host, port: e.port }),
      allowHalfOpen: true,
    });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Everything the socket sends until it ends (cleanly: ended) or closes. */
function readAll(s: Socket, timeoutMs = 5000): Promise<{ data: Buffer; ended: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => reject(new Error(`no end within ${timeoutMs} ms`)), timeoutMs);
    const done = (ended: boolean) => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(chunks), ended });
    };
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => done(true));
    s.on('error', () => {});
    s.on('close', () => done(false));
    s.resume();
  });
}

/** Reads until `n` bytes (or the head's blank line when n is 'head') arrived. */
function readUntil(s: Socket, n: number | 'head'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const onData = (c: Buffer) => {
      got = Buffer.concat([got, c]);
      const end = n === 'head' ? got.indexOf('\r\n\r\n') : got.length >= n ? n : -1;
      if (end < 0) return;
      s.off('data', onData);
      s.pause();
      const cut = n === 'head' ? end + 4 : n;
      if (got.length > cut) s.unshift(got.subarray(cut));
      resolve(got.subarray(0, cut));
    };
    s.on('data', onData);
    s.resume();
    s.once('close', () =>
      reject(new Error(`closed after ${got.length} bytes: ${got.toString().slice(0, 200)}`)),
    );
  });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Sends `payload`, half-closes, and returns what came back before the relay's end. */
async function roundTrip(at: Endpoint, payload: Buffer): Promise<Buffer> {
  const s = await dialTo(at);
  const back = readAll(s);
  s.end(payload);
  const { data, ended } = await back;
  assert.ok(ended, 'the far side ended cleanly');
  return data;
}

describe('forward: one process relays every connection', () => {
  let echo: { server: Server; port: number };
  let host: Relay;
  let inside: Relay;
  before(async () => {
    echo = await echoServer();
    // As on a real node: a TCP port in the namespace → api.sock → the API server's port.
    const sock = join(dir, 'api.sock');
    host = await forward({ listen: { unix: sock }, target: { host: '127.0.0.1', port: echo.port } });
    inside = await forward({ listen: { host: '127.0.0.1', port: 0 }, target: { unix: sock } });
  });
  after(async () => {
    await inside.close();
    await host.close();
    await closeServer(echo.server);
  });

  it('reports the port it was given when asked for port 0', () => {
    assert.ok('port' in inside.address && inside.address.port > 0);
  });

  it('carries the bytes both ways over 50 concurrent connections, through two relays', async () => {
    const payloads = Array.from({ length: 50 }, (_, i) => randomBytes(1000 + i * 4096));
    const backs = await Promise.all(payloads.map((p) => roundTrip(inside.address, p)));
    for (const [i, p] of payloads.entries()) assert.equal(sha(backs[i]!), sha(p), `connection ${i}`);
    await until('every pair closed', () => inside.connections === 0 && host.connections === 0);
  });

  it('counts the connections open', async () => {
    const sockets = await Promise.all(Array.from({ length: 5 }, () => dialTo(inside.address)));
    await until('5 counted on both relays', () => inside.connections === 5 && host.connections === 5);
    for (const s of sockets) s.destroy();
    await until('none left', () => inside.connections === 0 && host.connections === 0);
  });

  it('half-close: the client ends its writing and still reads the answer', async () => {
    // A server that answers only once the request has ended: it must see the client's FIN.
    const counter = createServer({ allowHalfOpen: true }, (s) => {
      let n = 0;
      s.on('data', (c: Buffer) => {
        n += c.length;
      });
      s.on('end', () => setTimeout(() => s.end(`got ${n} bytes`), 50));
    });
    const port = await listen(counter);
    const relay = await forward({
      listen: { host: '127.0.0.1', port: 0 },
      target: { host: '127.0.0.1', port },
    });
    try {
      assert.equal((await roundTrip(relay.address, Buffer.alloc(300_000, 1))).toString(), 'got 300000 bytes');
    } finally {
      await relay.close();
      await closeServer(counter);
    }
  });

  it('half-close the other way: the target ends first and still receives what the client sends', async () => {
    let received: Promise<string> = Promise.resolve('');
    const greeter = createServer({ allowHalfOpen: true }, (s) => {
      received = readAll(s).then((r) => r.data.toString());
      s.end('hello');
    });
    const port = await listen(greeter);
    const relay = await forward({
      listen: { unix: join(dir, 'greeter.sock') },
      target: { host: '127.0.0.1', port },
    });
    try {
      const s = await dialTo(relay.address);
      assert.equal((await readUntil(s, 5)).toString(), 'hello');
      if (!s.readableEnded) {
        const ended = new Promise((r) => s.once('end', r));
        s.resume();
        await ended;
      }
      s.end('late words');
      assert.equal(await received, 'late words');
    } finally {
      await relay.close();
      await closeServer(greeter);
    }
  });

  it('closes the client when the target refuses', async () => {
    const relay = await forward({
      listen: { host: '127.0.0.1', port: 0 },
      target: { host: '127.0.0.1', port: await closedPort() },
    });
    try {
      const s = await dialTo(relay.address);
      const { data } = await readAll(s);
      assert.equal(data.length, 0);
      await until('no connection counted', () => relay.connections === 0);
    } finally {
      await relay.close();
    }
  });

  it('close() stops listening, removes its socket and cuts every open connection', async () => {
    const sock = join(dir, 'closing.sock');
    const a = await forward({ listen: { unix: sock }, target: { host: '127.0.0.1', port: echo.port } });
    const b = await forward({ listen: { host: '127.0.0.1', port: 0 }, target: { unix: sock } });
    const s = await dialTo(b.address);
    s.write('x');
    assert.equal((await readUntil(s, 1)).toString(), 'x');
    const gone = readAll(s);
    await b.close();
    await a.close();
    await gone;
    assert.equal(existsSync(sock), false, 'the unix socket is removed');
    await assert.rejects(dialTo(b.address), /ECONNREFUSED/);
    await assert.rejects(dialTo({ unix: sock }), /ENOENT/);
    assert.equal(a.connections + b.connections, 0);
  });
});

describe('forward: the unix socket it listens on', () => {
  it('replaces a stale socket left by a relay that was killed', async () => {
    const sock = join(dir, 'stale.sock');
    const child = spawn(process.execPath, [
      '-e',
      `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    await new Promise((r) => child.once('exit', r));
    assert.ok(existsSync(sock), 'the killed process left its socket');
    const relay = await forward({ listen: { unix: sock }, target: { host: '127.0.0.1', port: 1 } });
    await relay.close();
  });

  it('refuses a socket a running process listens on, and a path that is not a socket', async () => {
    const sock = join(dir, 'live.sock');
    const live = createServer();
    await listen(live, { unix: sock });
    try {
      await assert.rejects(forward({ listen: { unix: sock }, target: { unix: '/nowhere' } }), /in use/);
    } finally {
      await closeServer(live);
    }
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'keep me');
    await assert.rejects(
      forward({ listen: { unix: file }, target: { unix: '/nowhere' } }),
      /not a unix socket/,
    );
    assert.equal(readFileSync(file, 'utf8'), 'keep me');
  });
});

describe('connectProxy: HTTP CONNECT for the API server egress selector', () => {
  let echo: { server: Server; port: number };
  let proxy: Relay;
  let refused = 0;
  before(async () => {
    echo = await echoServer();
    refused = await closedPort();
    proxy = await connectProxy({
      listen: { unix: join(dir, 'cluster.sock') },
      allow: (host, port) => host === '127.0.0.1' && port !== 22,
    });
  });
  after(async () => {
    await proxy.close();
    await closeServer(echo.server);
  });

  const head = (target: string, method = 'CONNECT') =>
    `${method} ${target} HTTP/1.1\r\nHost: ${target}\r\nUser-Agent: Go-http-client/1.1\r\n\r\n`;

  async function ask(request: string | Buffer[]): Promise<{ head: string; socket: Socket }> {
    const s = await dialTo(proxy.address);
    if (typeof request === 'string') s.write(request);
    else
      for (const part of request) {
        s.write(part);
        await sleep(20); // each in a packet of its own
      }
    return { head: (await readUntil(s, 'head')).toString('latin1'), socket: s };
  }

  it('answers 200 Connection established, then carries raw bytes both ways', async () => {
    const { head: answer, socket } = await ask(head(`127.0.0.1:${echo.port}`));
    assert.equal(answer, 'HTTP/1.1 200 Connection established\r\n\r\n');
    const payload = randomBytes(200_000);
    const back = readAll(socket);
    socket.resume();
    socket.end(payload);
    assert.equal(sha((await back).data), sha(payload));
  });

  it('keeps the bytes that arrived in the same packet as the request head', async () => {
    const { head: answer, socket } = await ask(`${head(`127.0.0.1:${echo.port}`)}early bytes`);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.equal((await readUntil(socket, 11)).toString(), 'early bytes');
    socket.destroy();
  });

  it('reads a head split across packets, even inside its blank line', async () => {
    const text = `${head(`127.0.0.1:${echo.port}`)}after`;
    const cuts = [3, 9, 30, text.indexOf('\r\n\r\n') + 1, text.indexOf('\r\n\r\n') + 3, text.length];
    const parts = cuts.map((c, i) => Buffer.from(text.slice(i ? cuts[i - 1] : 0, c)));
    const { head: answer, socket } = await ask(parts);
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.equal((await readUntil(socket, 5)).toString(), 'after');
    socket.destroy();
  });

  it('answers 502 when the target refuses the dial, and closes', async () => {
    const { head: answer, socket } = await ask(head(`127.0.0.1:${refused}`));
    assert.match(answer, /^HTTP\/1\.1 502 Bad Gateway\r\n/);
    const { data, ended } = await readAll(socket);
    assert.ok(ended, 'the proxy ends its side after the answer');
    assert.match(data.toString(), /ECONNREFUSED/);
    socket.destroy();
  });

  it('answers 403 to a target it may not dial', async () => {
    for (const target of ['127.0.0.2:80', '127.0.0.1:22']) {
      const { head: answer, socket } = await ask(head(target));
      assert.match(answer, /^HTTP\/1\.1 403 Forbidden\r\n/, target);
      socket.destroy();
    }
  });

  it('answers 405 to any other method, naming CONNECT', async () => {
    const { head: answer, socket } = await ask(head('/', 'GET'));
    assert.match(answer, /^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    assert.match(answer, /\r\nAllow: CONNECT\r\n/);
    socket.destroy();
  });

  it('answers 400 to a target that is not host:port', async () => {
    const { head: answer, socket } = await ask(head('example'));
    assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
    socket.destroy();
  });

  it('closes a client that leaves before its head is complete', async () => {
    const s = await dialTo(proxy.address);
    const done = readAll(s);
    s.end('CONNECT 127.0.0.1:1 HT');
    assert.equal((await done).data.length, 0);
    await until('no connection counted', () => proxy.connections === 0);
  });
});

describe('parseEndpoint', () => {
  const cases: [string, Endpoint | RegExp][] = [
    ['unix:/run/x/api.sock', { unix: '/run/x/api.sock' }],
    ['tcp:127.0.0.1:6443', { host: '127.0.0.1', port: 6443 }],
    ['tcp:[::1]:6443', { host: '::1', port: 6443 }],
    ['tcp:localhost:0', { host: 'localhost', port: 0 }],
    ['unix:relative.sock', /absolute path/],
    ['tcp:127.0.0.1', /neither/],
    ['tcp:127.0.0.1:70000', /neither/],
    ['udp:127.0.0.1:53', /neither/],
  ];
  for (const [text, want] of cases)
    it(text, () => {
      if (want instanceof RegExp) assert.throws(() => parseEndpoint(text), want);
      else assert.deepEqual(parseEndpoint(text), want);
    });
});

describe('parseConnectRequest', () => {
  const cases: [string, ReturnType<typeof parseConnectRequest> | number][] = [
    ['CONNECT 10.244.1.5:9443 HTTP/1.1\r\nHost: 10.244.1.5:9443', { host: '10.244.1.5', port: 9443 }],
    ['CONNECT [fd00::1]:10250 HTTP/1.1', { host: 'fd00::1', port: 10250 }],
    ['CONNECT node-1:10250 HTTP/1.0', { host: 'node-1', port: 10250 }],
    ['GET / HTTP/1.1', 405],
    ['CONNECT 10.0.0.1 HTTP/1.1', 400],
    ['CONNECT 10.0.0.1:0 HTTP/1.1', 400],
    ['CONNECT 10.0.0.1:443 HTTP/2.0', 505],
    ['garbage', 400],
  ];
  for (const [line, want] of cases)
    it(line.split('\r\n')[0]!, () => {
      const got = parseConnectRequest(line);
      if (typeof want === 'number') assert.equal('status' in got && got.status, want);
      else assert.deepEqual(got, want);
    });
});

describe('the relay command line', () => {
  it('reads any number of forwards and proxies', () => {
    const plan = parseRelayArgs([
      '--forward',
      'unix:/c/api.sock=tcp:127.0.0.1:6443',
      '--forward',
      'tcp:172.30.0.1:6443=unix:/c/api.sock',
      '--connect-proxy',
      'unix:/c/cluster.sock',
      '--allow',
      '172.30.0.0/24',
    ]);
    assert.deepEqual(plan.forwards, [
      { listen: { unix: '/c/api.sock' }, target: { host: '127.0.0.1', port: 6443 } },
      { listen: { host: '172.30.0.1', port: 6443 }, target: { unix: '/c/api.sock' } },
    ]);
    assert.deepEqual(plan.proxies, [{ unix: '/c/cluster.sock' }]);
  });

  const mistakes: [string[], RegExp][] = [
    [[], /nothing to relay/],
    [['--forward', 'unix:/a.sock'], /LISTEN=TARGET/],
    [['--forward', 'unix:/a=b.sock=tcp:1.2.3.4:5'], /LISTEN=TARGET/],
    [['--connect-proxy', 'tcp:1.2.3.4'], /neither/],
    [['--connect-proxy', 'unix:/p', '--allow', '10.0.0.0/33'], /address range/],
    [['--connect-proxy', 'unix:/p', '--bogus'], /Unknown option/],
  ];
  for (const [args, want] of mistakes)
    it(`refuses ${args.join(' ') || 'no flags'}`, () => assert.throws(() => parseRelayArgs(args), want));

  it('--allow lets only addresses in its ranges through', () => {
    const allow = allowList(['172.30.0.0/24', '10.244.0.0/16', 'fd00::/8'])!;
    assert.deepEqual(
      ['172.30.0.2', '10.244.3.7', 'fd00::5', '172.30.1.1', '127.0.0.1', 'node-1', '::1'].map(allow),
      [true, true, true, false, false, false, false],
    );
    assert.equal(allowList([]), undefined);
  });
});

describe('nodewarden cluster relay: the process', () => {
  /** A figure of /proc/<pid>/status in KiB: VmRSS, and RssAnon (the process's own, not the node binary's shared pages). */
  const status = (pid: number, field: 'VmRSS' | 'RssAnon') =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  const rss = (pid: number) => status(pid, 'VmRSS');

  it('says when it listens, holds 50 connections at a small cost each, and exits 0 on SIGTERM', async (t) => {
    const echo = await echoServer();
    const sock = join(dir, 'process.sock');
    const port = await closedPort();
    const child = spawn(
      BIN,
      [
        'cluster',
        'relay',
        '--forward',
        `unix:${sock}=tcp:127.0.0.1:${echo.port}`,
        '--forward',
        `tcp:127.0.0.1:${port}=unix:${sock}`,
      ],
      { env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    try {
      await until('the listening line', () => out.includes('\n'), 30_000);
      const line = JSON.parse(out.split('\n')[0]!) as { msg: string; pid: number; forwards: string[] };
      assert.equal(line.msg, 'relay listening');
      assert.equal(line.pid, child.pid, 'the launcher execs node: the pid is the relay');
      assert.deepEqual(line.forwards, [
        `unix:${sock}=tcp:127.0.0.1:${echo.port}`,
        `tcp:127.0.0.1:${port}=unix:${sock}`,
      ]);

      // Warm both paths once, so code compiled on first use is not counted per connection.
      await roundTrip({ host: '127.0.0.1', port }, Buffer.from('warm'));
      await sleep(200);
      const idle = rss(child.pid!);
      // 50 clients, each a pair on both forwards: 200 sockets in the one process.
      const sockets = await Promise.all(
        Array.from({ length: 50 }, () => dialTo({ host: '127.0.0.1', port })),
      );
      await Promise.all(
        sockets.map(async (s, i) => {
          s.write(`hello ${i}`);
          assert.equal((await readUntil(s, `hello ${i}`.length)).toString(), `hello ${i}`);
        }),
      );
      const busy = rss(child.pid!);
      const perConnection = ((busy - idle) / 50).toFixed(1);
      const figure = `relay RSS: ${(idle / 1024).toFixed(1)} MiB idle, ${(busy / 1024).toFixed(1)} MiB with 50 open connections (${perConnection} KiB each); of it anonymous: ${(status(child.pid!, 'RssAnon') / 1024).toFixed(1)} MiB`;
      t.diagnostic(figure);
      process.stderr.write(`${figure}\n`);
      // socat's fork cost ~2.5 MiB a connection; ours must be a small fraction of it.
      assert.ok(busy - idle < 50 * 256, `50 connections cost ${busy - idle} KiB`);
      for (const s of sockets) s.destroy();

      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.match(out, /"msg":"relay stopped"/);
      assert.equal(existsSync(sock), false);
    } finally {
      child.kill('SIGKILL');
      await closeServer(echo.server);
    }
  });

  it('exits 2 with its usage on a mistake', async () => {
    const child = spawn(BIN, ['cluster', 'relay', '--forward', 'nonsense'], {
      env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    assert.equal(await new Promise((r) => child.once('exit', r)), 2);
    assert.match(err, /--forward "nonsense" is not LISTEN=TARGET/);
    assert.match(err, /Usage: nodewarden cluster relay/);
  });
});
