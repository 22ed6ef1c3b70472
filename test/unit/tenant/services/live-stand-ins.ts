// Stand-ins and runners for the support services' live test
// (test/integration/tenant-services.test.ts): API servers and workers on
// loopback, a self-signed certificate from openssl, and Debian's HAProxy run
// in the foreground on a rendered config.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { eventually } from '../../../harness/cluster.ts';

/** A stand-in kube-apiserver: HTTPS, /readyz answering as told, anything else naming itself. */
export class ApiServerStandIn {
  readyz = 200;
  checks = 0;
  port = 0;
  readonly name: string;
  private readonly server: https.Server;
  constructor(name: string, tls: { key: string; cert: string }) {
    this.name = name;
    this.server = https.createServer(tls, (req, res) => {
      if (req.url === '/readyz') {
        this.checks++;
        res.writeHead(this.readyz).end(this.readyz === 200 ? 'ok' : 'not ready');
      } else res.end(this.name);
    });
  }
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }
  stop(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

export function selfSigned(dir: string): { key: string; cert: string } {
  const [key, cert] = [join(dir, 'tls.key'), join(dir, 'tls.crt')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=kube-apiserver',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

/** One HTTPS request on a fresh connection (HAProxy balances connections): the backend that answered. */
export function whoAnswers(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port, path: '/who', rejectUnauthorized: false, agent: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
  });
}

/** Debian's haproxy in the foreground on a config, up once every frontend port accepts. */
export class HAProxyRun {
  private readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }
  log = '';
  private proc: ChildProcess | undefined;
  async start(name: string, cfg: string, ports: number[]): Promise<void> {
    const file = join(this.dir, `${name}.cfg`);
    writeFileSync(file, cfg);
    const proc = spawn('haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    proc.stdout?.on('data', (c) => (this.log += c));
    proc.stderr?.on('data', (c) => (this.log += c));
    await eventually(`HAProxy listening on ${ports.join(', ')}`, async () => {
      if (proc.exitCode !== null) throw new Error(`haproxy exited: ${this.log}`);
      for (const port of ports)
        await new Promise<void>((resolve, reject) => {
          const c = connect(port, '127.0.0.1', () => c.end(resolve));
          c.on('error', reject);
        });
      return true;
    });
  }
  stop(): void {
    this.proc?.kill();
  }
}

/** A worker's service on one port: answers who and where it is, then hangs up. */
export async function tcpStandIn(ip: string, port: number, name: string): Promise<Server> {
  const s = createServer((c) => {
    // HAProxy's TCP checks connect and reset at once: a reset is no failure here.
    c.on('error', () => {});
    c.end(`${name}:${port}`);
  });
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, ip, resolve);
  });
  return s;
}

/** What one fresh connection to 127.0.0.1:port reads ('' when HAProxy found no server). */
export function tcpAnswer(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const c = connect(port, '127.0.0.1');
    c.on('data', (d) => (data += d));
    c.on('end', () => resolve(data));
    c.on('error', reject);
    c.setTimeout(5000, () => c.destroy(new Error('timed out')));
  });
}
