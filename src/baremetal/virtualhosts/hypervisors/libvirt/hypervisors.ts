// The libvirt hypervisors: each node's VM host agent, found where the agents
// publish themselves (kube-system/nodewarden-vm-host-agents, one key per
// node), reached over HTTPS pinned to the agent's own CA. Failures are the
// seam's HypervisorErrors, so they reach the controller as any hypervisor's.
import https from 'node:https';
import type { KubeClient } from '../../../../runtime/client.ts';
import { isNotFound } from '../../../../runtime/errors.ts';
import { ConfigMaps, type K8sObject } from '../../../../runtime/resources.ts';
import {
  type HeldVm,
  type Hypervisor,
  HypervisorError,
  type HypervisorSource,
  type Hypervisors,
  type VmDefinition,
} from '../hypervisor.ts';
import { AGENTS_CONFIGMAP, AGENTS_NAMESPACE, agentPaths, type PublishedAgent } from './agent-protocol.ts';

/** A VM definition takes a volume per disk and a network per NIC: seconds, not milliseconds. */
const TIMEOUT_MS = 120_000;
/** How long a read of the published agents is trusted. */
const REREAD_MS = 5_000;

/** One node's agent. */
class AgentHypervisor implements Hypervisor {
  readonly node: string;
  private readonly endpoint: URL;
  private readonly agent: https.Agent;
  constructor(node: string, published: PublishedAgent) {
    this.node = node;
    this.endpoint = new URL(published.endpoint);
    this.agent = new https.Agent({ ca: published.caCert, keepAlive: true });
  }
  define(vm: VmDefinition): Promise<HeldVm> {
    return this.call<HeldVm>('POST', agentPaths.vms, vm);
  }
  async remove(id: string): Promise<void> {
    await this.call('DELETE', agentPaths.vm(id));
  }
  list(): Promise<HeldVm[]> {
    return this.call<HeldVm[]>('GET', agentPaths.vms);
  }
  close(): void {
    this.agent.destroy();
  }

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const where = `VM host agent of ${this.node} (${this.endpoint.origin})`;
    return new Promise<T>((resolve, reject) => {
      const req = https.request(new URL(path, this.endpoint), {
        method,
        agent: this.agent,
        headers: payload
          ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
          : {},
      });
      req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer in ${TIMEOUT_MS} ms`)));
      req.on('error', (err) => reject(new HypervisorError(`${where} unreachable: ${err.message}`, true)));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const code = res.statusCode ?? 0;
          if (code < 200 || code >= 300)
            return reject(
              new HypervisorError(
                `${where}: ${method} ${path}: ${code} ${text.slice(0, 300)}`,
                code >= 500,
                code,
              ),
            );
          try {
            resolve((text ? JSON.parse(text) : undefined) as T);
          } catch {
            reject(new HypervisorError(`${where}: ${method} ${path}: not JSON`, true));
          }
        });
      });
      req.end(payload);
    });
  }
}

/** The published agents; a node without one is a retryable HypervisorError. */
export class LibvirtHypervisors implements Hypervisors {
  private readonly agents = new Map<string, AgentHypervisor>();
  private readonly published: Record<string, string>;
  constructor(published: Record<string, string>) {
    this.published = published;
  }
  of(node: string): Hypervisor {
    const have = this.agents.get(node);
    if (have) return have;
    const raw = this.published[node];
    if (!raw) return missingAgent(node);
    const made = new AgentHypervisor(node, JSON.parse(raw) as PublishedAgent);
    this.agents.set(node, made);
    return made;
  }
  close(): void {
    for (const a of this.agents.values()) a.close();
  }
}

function missingAgent(node: string): Hypervisor {
  const fail = () =>
    Promise.reject(new HypervisorError(`no VM host agent is published for node ${node}`, true));
  return { node, define: fail, remove: fail, list: fail };
}

/** The agents published in kube-system/nodewarden-vm-host-agents, read anew every REREAD_MS. */
export function publishedAgents(client: KubeClient): HypervisorSource {
  let current: { key: string; at: number; hypervisors: LibvirtHypervisors } | undefined;
  const find = async () => {
    if (current && Date.now() - current.at < REREAD_MS) return current.hypervisors;
    const cm = await client
      .get<K8sObject & { data?: Record<string, string> }>(ConfigMaps, AGENTS_CONFIGMAP, AGENTS_NAMESPACE)
      .catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
    const data = cm?.data ?? {};
    if (Object.keys(data).length === 0) return undefined;
    const key = JSON.stringify(data);
    if (current?.key !== key) {
      current?.hypervisors.close();
      current = { key, at: Date.now(), hypervisors: new LibvirtHypervisors(data) };
    } else current.at = Date.now();
    return current.hypervisors;
  };
  return {
    name: 'the VM host agents',
    missing: `no VM host agent is published in ${AGENTS_NAMESPACE}/${AGENTS_CONFIGMAP} (start one: nodewarden vm-host agent --node <node> --publish)`,
    find,
  };
}

/** Publishes (or, with undefined, withdraws) a node's agent. */
export async function publishAgent(
  client: KubeClient,
  node: string,
  agent: PublishedAgent | undefined,
): Promise<void> {
  const value = agent ? JSON.stringify(agent) : null;
  const patch = { data: { [node]: value } };
  try {
    await client.patch(ConfigMaps, AGENTS_CONFIGMAP, AGENTS_NAMESPACE, patch, { type: 'merge' });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    if (!agent) return;
    await client.create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: AGENTS_CONFIGMAP, namespace: AGENTS_NAMESPACE },
      data: { [node]: value as string },
    });
  }
}
