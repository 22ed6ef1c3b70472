// Machines and a fleet server for the BMC fleet's unit tests.
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MachineSpec } from '../../../src/cluster/infra/bmc/protocol.ts';
import { BmcServer } from '../../../src/cluster/infra/bmc/server.ts';
import { ensureCertificate, type FleetCertificate } from '../../../src/cluster/infra/bmc/tls.ts';

/** A physical machine whose MAC and password follow from its id. */
export function spec(id: string, over: Partial<MachineSpec> = {}): MachineSpec {
  let h = 0;
  for (const c of id) h = (h * 31 + c.charCodeAt(0)) & 0xffff;
  const mac = `02:00:00:00:${(h >> 8).toString(16).padStart(2, '0')}:${(h & 0xff).toString(16).padStart(2, '0')}`;
  return {
    id,
    kind: 'physical',
    rack: 'rack-0',
    cpus: 16,
    memoryMiB: 65536,
    diskGB: 960,
    nics: [{ name: 'eno1', mac, ip: '198.18.0.10' }],
    credentials: { username: 'admin', password: `pw-${id}` },
    ...over,
  };
}

let shared: { dir: string; cert: FleetCertificate } | undefined;

/** One certificate for the whole test process (openssl runs once). */
export function testCertificate(): FleetCertificate {
  if (!shared) {
    const dir = mkdtempSync(join(tmpdir(), 'bmc-cert-'));
    shared = { dir, cert: ensureCertificate(dir, 'unit') };
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return shared.cert;
}

export async function startFleet(opts: { clock?: () => number } = {}): Promise<BmcServer> {
  const server = new BmcServer({ certificate: testCertificate(), tickMs: 0, ...opts });
  await server.start();
  return server;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // biome-ignore lint/suspicious/noExplicitAny: Redfish documents, read field by field as a client would
  body: any;
}

/** One HTTPS call trusting the fleet's certificate; rejects when the connection is dropped. */
export function call(
  server: BmcServer,
  method: string,
  path: string,
  opts: { basic?: [string, string]; token?: string; body?: unknown } = {},
): Promise<Answer> {
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = {};
  if (payload) headers['content-type'] = 'application/json';
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(opts.basic.join(':')).toString('base64')}`;
  if (opts.token) headers['x-auth-token'] = opts.token;
  return new Promise((resolve, reject) => {
    const req = https.request(
      new URL(path, server.url),
      { method, ca: testCertificate().cert, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text ? JSON.parse(text) : undefined,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
