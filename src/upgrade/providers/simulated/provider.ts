// The CloudProvider of the simulated cloud: an HTTP client for its API (the
// wire types of src/cluster/infra/cloud/protocol.ts), written as a real cloud's
// client would be (no shared memory with the server), so the operator exercises
// the same error paths it would meet against AWS or GCP.

import type { Instance, ScalingGroup } from '../../../cluster/infra/cloud/protocol.ts';
import {
  CloudError,
  type CloudProvider,
  type CreatedNode,
  type GroupListing,
  type InstanceState,
  type ScalingGroupInfo,
} from '../interface.ts';

export interface SimulatedCloudProviderOptions {
  /** Base URL of the cloud API, e.g. http://127.0.0.1:41234. */
  endpoint: string;
  /** Per-request limit. Default 10 s. */
  timeoutMs?: number;
}

const RETRYABLE = new Set([429, 500, 502, 503, 504]);

export class SimulatedCloudProvider implements CloudProvider {
  private readonly endpoint: string;
  private readonly timeoutMs: number;

  constructor(opts: SimulatedCloudProviderOptions) {
    this.endpoint = opts.endpoint.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  async nodeImage(providerID: string): Promise<string> {
    return (await this.instance(providerID)).image;
  }

  async scalingGroupId(providerID: string): Promise<string> {
    return (await this.instance(providerID)).groupId;
  }

  async createNode(groupId: string): Promise<CreatedNode> {
    const i = await this.call<Instance>('POST', `/groups/${encodeURIComponent(groupId)}/instances`, {});
    return { nodeName: i.nodeName, providerID: i.providerID };
  }

  /** The simulated cloud lists an instance as soon as it is asked for: no launch is ever unlisted. */
  async listGroup(groupId: string): Promise<GroupListing> {
    const all = await this.call<Instance[]>('GET', `/groups/${encodeURIComponent(groupId)}/instances`);
    const instances = all
      .filter((i) => i.state !== 'Terminated')
      .map((i) => ({
        providerID: i.providerID,
        nodeName: i.nodeName,
        image: i.image,
        state: i.state,
        createdAt: i.createdAt,
      }));
    return { instances, requestedLaunches: [] };
  }

  async deleteNode(providerID: string): Promise<void> {
    try {
      await this.call('DELETE', instancePath(providerID));
    } catch (err) {
      if (!(err instanceof NotFound)) throw err;
    }
  }

  async nodeState(providerID: string): Promise<InstanceState> {
    try {
      return (await this.instance(providerID)).state;
    } catch (err) {
      if (err instanceof NotFound) return 'Terminated';
      throw err;
    }
  }

  async scalingGroupImage(groupId: string): Promise<string> {
    return (await this.call<ScalingGroup>('GET', `/groups/${encodeURIComponent(groupId)}`)).launchImage;
  }

  async setScalingGroupImage(groupId: string, image: string, kubernetesVersion?: string): Promise<undefined> {
    const body = kubernetesVersion ? { image, kubernetesVersion } : { image };
    await this.call('PUT', `/groups/${encodeURIComponent(groupId)}/image`, body);
    return undefined;
  }

  async scalingGroupKubernetesVersion(groupId: string): Promise<string | undefined> {
    return (await this.call<ScalingGroup>('GET', `/groups/${encodeURIComponent(groupId)}`)).kubernetesVersion;
  }

  async listScalingGroups(clusterId: string): Promise<ScalingGroupInfo[]> {
    const groups = await this.call<ScalingGroup[]>('GET', `/groups?cluster=${encodeURIComponent(clusterId)}`);
    return groups.map((g) => ({ groupId: g.id, name: g.name, role: g.role, autoscalerGroupName: g.name }));
  }

  autoscalingCloudProvider(): string {
    return 'kwok';
  }

  private instance(providerID: string): Promise<Instance> {
    return this.call<Instance>('GET', instancePath(providerID));
  }

  private async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const what = `${method} ${path}`;
    let res: Response;
    try {
      res = await fetch(this.endpoint + path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      // Unreachable or timed out: the request may be repeated safely (every method is idempotent or names a new instance).
      throw new CloudError(`simulated cloud: ${what}: ${(err as Error).message}`, {
        retryable: true,
        cause: err,
      });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch (err) {
      throw new CloudError(`simulated cloud: ${what}: response is not JSON`, {
        retryable: false,
        cause: err,
      });
    }
    if (res.ok) return parsed as T;
    const message = `simulated cloud: ${what}: ${res.status} ${errorText(parsed) ?? res.statusText}`;
    if (res.status === 404) throw new NotFound(message);
    throw new CloudError(message, { retryable: RETRYABLE.has(res.status) });
  }
}

/** A 404 from the API; methods that may meet one translate it, others let it out as non-retryable. */
class NotFound extends CloudError {
  constructor(message: string) {
    super(message, { retryable: false });
  }
}

function instancePath(providerID: string): string {
  return `/instances/${encodeURIComponent(providerID)}`;
}

function errorText(body: unknown): string | undefined {
  if (typeof body === 'object' && body !== null && 'error' in body && typeof body.error === 'string') {
    return body.error;
  }
  return undefined;
}
