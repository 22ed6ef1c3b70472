// The libvirt hypervisors: each node's VM host agent, found where the agents
// publish themselves (the Secret kube-system/nodewarden-vm-host-agents, one
// key per node), reached over HTTPS pinned to the agent's own CA, with its
// console token. Failures are the seam's HypervisorErrors, so they reach the
// controller as any hypervisor's.
import https from 'node:https';
import type { KubeClient } from '../../../../runtime/client.ts';
import { isNotFound } from '../../../../runtime/errors.ts';
import { type K8sObject, Secrets } from '../../../../runtime/resources.ts';
import {
  type AgentRun,
  type HeldVm,
  type Hypervisor,
  HypervisorError,
  type HypervisorSource,
  type Hypervisors,
  type VmDefinition,
} from '../hypervisor.ts';
import { AGENTS_NAMESPACE, AGENTS_SECRET, agentPaths, type PublishedAgent } from './agent-protocol.ts';

/** A VM definition takes a volume per disk and a network per NIC: seconds, not milliseconds. */
const TIMEOUT_MS = 120_000;
/** How long a read of the published agents is trusted. */
const REREAD_MS = 5_000;

/** One node's agent. */
class AgentHypervisor implements Hypervisor {
  readonly node: string;
  private readonly endpoint: URL;
  private readonly agent: https.Agent;
  private readonly token: string;
  constructor(node: string, published: PublishedAgent) {
    this.node = node;
    this.token = published.token;
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
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
            : {}),
        },
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

/** The image the pool's DaemonSet runs the agent from where the pool names none (the operator's own, as its manifests name it). */
export const DEFAULT_VM_HOST_AGENT_IMAGE = 'nodewarden:latest';

/** The published agents; a node without one is a retryable HypervisorError. */
export class LibvirtHypervisors implements Hypervisors {
  readonly agent: AgentRun;
  private readonly agents = new Map<string, AgentHypervisor>();
  private readonly published: Record<string, string>;
  constructor(published: Record<string, string>, image = DEFAULT_VM_HOST_AGENT_IMAGE, libvirtDir?: string) {
    this.published = published;
    this.agent = { kind: 'vm-host-agent', image, ...(libvirtDir ? { libvirtDir } : {}) };
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

/** The records a published Secret holds, by node (its data is base64). */
function decodeRecords(data: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data ?? {}).map(([node, b64]) => [node, Buffer.from(b64, 'base64').toString()]),
  );
}

/** The agents published in kube-system/nodewarden-vm-host-agents, read anew every REREAD_MS. */
export function publishedAgents(
  client: KubeClient,
  image = DEFAULT_VM_HOST_AGENT_IMAGE,
  libvirtDir?: string,
): HypervisorSource {
  let current: { key: string; at: number; hypervisors: LibvirtHypervisors } | undefined;
  const find = async () => {
    if (current && Date.now() - current.at < REREAD_MS) return current.hypervisors;
    const secret = await client
      .get<K8sObject & { data?: Record<string, string> }>(Secrets, AGENTS_SECRET, AGENTS_NAMESPACE)
      .catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
    const data = decodeRecords(secret?.data);
    if (Object.keys(data).length === 0) return undefined;
    const key = JSON.stringify(data);
    if (current?.key !== key) {
      current?.hypervisors.close();
      current = { key, at: Date.now(), hypervisors: new LibvirtHypervisors(data, image, libvirtDir) };
    } else current.at = Date.now();
    return current.hypervisors;
  };
  return {
    name: 'the VM host agents',
    agentWhenNone: { kind: 'vm-host-agent', image, ...(libvirtDir ? { libvirtDir } : {}) },
    missing: `no VM host agent is published in ${AGENTS_NAMESPACE}/${AGENTS_SECRET} (start one: nodewarden vm-host agent --node <node> --publish)`,
    find,
  };
}

/** The Secret agents publish themselves in, empty: made by whoever may create it, so agents need only patch it. */
export function agentsSecret(): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: AGENTS_SECRET, namespace: AGENTS_NAMESPACE },
    type: 'Opaque',
  };
}

/** Publishes (or, with undefined, withdraws) a node's agent. */
export async function publishAgent(
  client: KubeClient,
  node: string,
  agent: PublishedAgent | undefined,
): Promise<void> {
  const value = agent ? Buffer.from(JSON.stringify(agent)).toString('base64') : null;
  const patch = { data: { [node]: value } };
  try {
    await client.patch(Secrets, AGENTS_SECRET, AGENTS_NAMESPACE, patch, { type: 'merge' });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    if (!agent) return;
    await client.create(Secrets, { ...agentsSecret(), data: { [node]: value as string } });
  }
}
