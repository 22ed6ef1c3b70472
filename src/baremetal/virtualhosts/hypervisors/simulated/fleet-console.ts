// A client of the simulated BMC fleet's JSON console (its wire protocol:
// src/cluster/infra/bmc/protocol.ts): HTTPS checked against the fleet's own
// CA. Failures are the seam's HypervisorErrors, so they reach the controller
// as any hypervisor's would.
import https from 'node:https';
import { consolePaths, type Machine, type MachineSpec } from '../../../../cluster/infra/bmc/protocol.ts';
import { HypervisorError } from '../hypervisor.ts';

const TIMEOUT_MS = 15_000;

export class FleetConsole {
  readonly endpoint: URL;
  private readonly agent: https.Agent;

  constructor(endpoint: string, caPem: string) {
    this.endpoint = new URL(endpoint);
    this.agent = new https.Agent({ ca: caPem, keepAlive: true });
  }

  /** Defines the machine, or finds it defined with the same spec; another spec is a 409. */
  async define(spec: MachineSpec): Promise<Machine> {
    const m = await this.call<Machine | undefined>('POST', consolePaths.machines, spec);
    // The console answers with the machine; read it back if it said nothing.
    return m?.bmcAddress ? m : this.call<Machine>('GET', consolePaths.machine(spec.id));
  }

  async remove(id: string): Promise<void> {
    await this.call('DELETE', consolePaths.machine(id), undefined, true);
  }

  async list(): Promise<Machine[]> {
    const body = await this.call<Machine[] | { items?: Machine[] }>('GET', consolePaths.machines);
    return Array.isArray(body) ? body : (body.items ?? []);
  }

  close(): void {
    this.agent.destroy();
  }

  private call<T = unknown>(method: string, path: string, body?: unknown, notFoundOk = false): Promise<T> {
    const url = new URL(path, this.endpoint);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((resolve, reject) => {
      const req = https.request(url, {
        method,
        agent: this.agent,
        headers: {
          Accept: 'application/json',
          ...(payload
            ? { 'Content-Type': 'application/json', 'Content-Length': String(payload.length) }
            : {}),
        },
      });
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
      req.on('error', (err) =>
        reject(new HypervisorError(`BMC fleet ${this.endpoint.origin} unreachable: ${err.message}`, true)),
      );
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(new HypervisorError(err.message, true)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const code = res.statusCode ?? 0;
          if (code === 404 && notFoundOk) return resolve(undefined as T);
          if (code < 200 || code >= 300)
            return reject(
              new HypervisorError(
                `BMC fleet ${method} ${path}: ${code} ${text.slice(0, 300)}`,
                code >= 500 || code === 429,
                code,
              ),
            );
          try {
            resolve((text ? JSON.parse(text) : undefined) as T);
          } catch {
            reject(new HypervisorError(`BMC fleet ${method} ${path}: not JSON: ${text.slice(0, 100)}`, true));
          }
        });
      });
      req.end(payload);
    });
  }
}
