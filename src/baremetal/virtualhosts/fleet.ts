// The Hypervisor on the simulated BMC fleet's JSON console (see
// src/cluster/infra/bmc/protocol.ts): HTTPS checked against the fleet's own
// CA, found through its published ConfigMap.
import https from 'node:https';
import {
  BMC_SIMULATOR,
  consolePaths,
  FLEET_CA_KEY,
  type Machine,
  type MachineSpec,
} from '../../cluster/infra/bmc/protocol.ts';
import { findEndpoint } from '../../cluster/infra/kit/discovery.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { type Hypervisor, HypervisorError } from './hypervisor.ts';

const TIMEOUT_MS = 15_000;
/** How long a read of the published endpoint is trusted (a fleet restarted on another port is found within it). */
const REREAD_MS = 10_000;

export class FleetHypervisor implements Hypervisor {
  readonly endpoint: URL;
  private readonly agent: https.Agent;

  constructor(endpoint: string, caPem: string) {
    this.endpoint = new URL(endpoint);
    this.agent = new https.Agent({ ca: caPem, keepAlive: true });
  }

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

/**
 * The fleet the cluster publishes (kube-system/nodewarden-simulated-bmc), or
 * undefined when it publishes none. Kept while the endpoint and CA stay the
 * same; a fleet restarted on another port is picked up on the next call.
 */
export function publishedFleet(client: KubeClient): () => Promise<Hypervisor | undefined> {
  let current: { key: string; fleet: FleetHypervisor } | undefined;
  let read: { at: number; published: Awaited<ReturnType<typeof findEndpoint>> } | undefined;
  return async () => {
    // One read of the ConfigMap per REREAD_MS, not one per reconcile.
    if (!read || Date.now() - read.at > REREAD_MS)
      read = { at: Date.now(), published: await findEndpoint(client, BMC_SIMULATOR) };
    const published = read.published;
    const ca = published?.[FLEET_CA_KEY];
    if (!published || !ca) return undefined;
    const key = `${published.endpoint}\n${ca}`;
    if (current?.key !== key) {
      current?.fleet.close();
      current = { key, fleet: new FleetHypervisor(published.endpoint, ca) };
    }
    return current.fleet;
  };
}
