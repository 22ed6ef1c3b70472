// The simulated cloud's HTTP API: a small JSON service over CloudState, on
// loopback, that the operator's SimulatedCloudProvider talks to as it would to
// a real cloud. With a NodeSync, instances that become Ready appear in the
// cluster as kwok-managed Nodes and disappear when they are deleted.
//
//   GET    /groups[?cluster=ID]            list groups
//   POST   /groups                         create a group (GroupSpec, optional "size")
//   GET    /groups/:id                     one group
//   PUT    /groups/:id/image               {"image", "kubernetesVersion"?}
//   GET    /groups/:id/instances           the group's instances (Terminated included)
//   POST   /groups/:id/instances           add one instance (201)
//   GET    /instances/:providerID          one instance (URL-encoded providerID)
//   DELETE /instances/:providerID          terminate it (idempotent; 404 if never known)
//   GET    /faults, POST /faults           read / merge fault settings ({"clear": true} resets)
//   GET    /settings, POST /settings       read / change runtime settings: {"bootDelayMs": 1000}
//                                          (instances already booting keep their time)
//
// /faults and /settings are the operator's console, not the cloud's API: the
// injected API faults never hit them.
import http from 'node:http';
import type { V1Node } from '@kubernetes/client-node';
import type { KubeClient } from '../../../runtime/client.ts';
import { HttpError, readJsonBody } from '../../../runtime/http.ts';
import { listen } from '../../../runtime/listen.ts';
import { type K8sObject, Nodes } from '../../../runtime/resources.ts';
import { Labels, simulatedNode } from '../../fleet.ts';
import {
  CloudState,
  CloudStateError,
  type CloudStateOptions,
  type FaultsPatch,
  type GroupSpec,
  type Instance,
  type ScalingGroup,
  type Settings,
} from './state.ts';

/** The label carrying the image an instance booted from. */
export const IMAGE_LABEL = Labels.image;
/** The label carrying the scaling group id of an instance. */
export const GROUP_LABEL = Labels.scalingGroup;

/** The Node object a Ready instance registers as: labelled like the fleet's nodes of its pool. */
export function instanceNode(instance: Instance, group: ScalingGroup): V1Node {
  const version = instance.kubernetesVersion.startsWith('v')
    ? instance.kubernetesVersion
    : `v${instance.kubernetesVersion}`;
  return simulatedNode({
    name: instance.nodeName,
    zone: instance.zone,
    instanceType: group.instanceType,
    pool: group.name,
    controlPlane: group.role === 'ControlPlane',
    cpu: group.cpu,
    memory: group.memory,
    pods: group.pods,
    kubeletVersion: version,
    labels: { ...group.labels, ...(instance.rack ? { [Labels.rack]: instance.rack } : {}) },
    providerID: instance.providerID,
    image: instance.image,
    scalingGroup: group.id,
    bootID: instance.providerID,
  });
}

export interface NodeSyncOptions {
  /** Told about Node create/delete failures (after the client's own retries). */
  onError?: (err: unknown, instance: Instance) => void;
}

/** Mirrors instances into the cluster: a Node per Ready instance, removed with the instance. */
export class NodeSync {
  private readonly client: KubeClient;
  private readonly onError: (err: unknown, instance: Instance) => void;
  private readonly inFlight = new Set<Promise<void>>();
  private detach: (() => void) | undefined;

  constructor(client: KubeClient, opts: NodeSyncOptions = {}) {
    this.client = client;
    this.onError = opts.onError ?? (() => {});
  }

  attach(state: CloudState): void {
    this.detach?.();
    this.detach = state.onInstance((event, instance) => {
      const group = state.getGroup(instance.groupId);
      if (event === 'ready' && group) this.track(this.createNode(instance, group), instance);
      else if (event === 'deleted') this.track(this.deleteNode(instance), instance);
    });
  }

  private track(p: Promise<void>, instance: Instance): void {
    const q = p.catch((err) => this.onError(err, instance));
    this.inFlight.add(q);
    void q.finally(() => this.inFlight.delete(q));
  }

  async createNode(instance: Instance, group: ScalingGroup): Promise<void> {
    await this.client.createIfAbsent(Nodes, instanceNode(instance, group) as K8sObject);
  }

  async deleteNode(instance: Instance): Promise<void> {
    await this.client.delete(Nodes, instance.nodeName, undefined, { ignoreNotFound: true });
  }

  /**
   * Brings the cluster in line with the cloud once, e.g. when the cloud starts again:
   * a Node for every Ready instance that has none (as a rebooted kubelet re-registers),
   * none for Terminated instances. Returns how many Nodes it created and deleted.
   */
  async reconcile(state: CloudState): Promise<{ created: number; deleted: number }> {
    const names = new Set(
      (await this.client.listAll<V1Node>(Nodes)).items.map((n) => n.metadata?.name ?? ''),
    );
    let created = 0;
    let deleted = 0;
    for (const i of state.listInstances()) {
      const group = state.getGroup(i.groupId);
      if (i.state === 'Ready' && group && !names.has(i.nodeName)) {
        await this.createNode(i, group);
        created++;
      } else if (i.state === 'Terminated' && names.has(i.nodeName)) {
        await this.deleteNode(i);
        deleted++;
      }
    }
    return { created, deleted };
  }

  /** Waits for the Node creations and deletions under way. */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async stop(): Promise<void> {
    this.detach?.();
    this.detach = undefined;
    await this.settle();
  }
}

export interface CloudServerOptions {
  /** An existing state; otherwise one is made from `stateOptions`. */
  state?: CloudState;
  stateOptions?: CloudStateOptions;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Milliseconds since the epoch; Date.now by default. */
  clock?: () => number;
  /** How often boots are advanced besides on every request. Default 100 ms; 0 disables the timer. */
  tickMs?: number;
  /** Creates and deletes Nodes in a cluster; without it the cloud runs alone. */
  nodeSync?: NodeSync;
}

const MAX_BODY = 1 << 20;

export class CloudServer {
  readonly state: CloudState;
  private readonly clock: () => number;
  private readonly tickMs: number;
  private readonly port: number;
  private readonly nodeSync: NodeSync | undefined;
  private readonly server: http.Server;
  private timer: NodeJS.Timeout | undefined;
  private address: string | undefined;

  constructor(opts: CloudServerOptions = {}) {
    this.state = opts.state ?? new CloudState(opts.stateOptions);
    this.clock = opts.clock ?? Date.now;
    this.tickMs = opts.tickMs ?? 100;
    this.port = opts.port ?? 0;
    this.nodeSync = opts.nodeSync;
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        const status = err instanceof HttpError || err instanceof CloudStateError ? err.status : 500;
        send(res, status, { error: err instanceof Error ? err.message : String(err) });
      });
    });
  }

  /** The base URL, e.g. http://127.0.0.1:41234; set once started. */
  get url(): string {
    if (!this.address) throw new Error('cloud server not started');
    return this.address;
  }

  async start(): Promise<string> {
    const addr = await listen(this.server, `127.0.0.1:${this.port}`, 'the simulated cloud');
    this.nodeSync?.attach(this.state);
    this.address = `http://127.0.0.1:${addr.port}`;
    if (this.tickMs > 0) {
      this.timer = setInterval(() => this.state.tick(this.clock()), this.tickMs);
      this.timer.unref();
    }
    return this.address;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.server.listening) {
      await new Promise<void>((resolve, reject) => {
        this.server.close((err) => (err ? reject(err) : resolve()));
        this.server.closeAllConnections();
      });
    }
    await this.nodeSync?.stop();
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const method = req.method ?? 'GET';
    const body =
      method === 'POST' || method === 'PUT' ? ((await readJsonBody(req, MAX_BODY)) ?? {}) : undefined;
    const now = this.clock();
    this.state.tick(now);
    const [top, id, sub, ...rest] = parts;

    if (top === 'faults' && parts.length === 1) {
      if (method === 'GET') return send(res, 200, this.state.getFaults());
      if (method === 'POST') {
        const patch = asObject(body);
        if (patch.clear === true) this.state.clearFaults();
        const { clear: _, ...faults } = patch;
        return send(res, 200, this.state.setFaults(faults as FaultsPatch));
      }
      throw new HttpError(405, `${method} not allowed on /faults`);
    }
    if (top === 'settings' && parts.length === 1) {
      if (method === 'GET') return send(res, 200, this.state.getSettings());
      if (method === 'POST') {
        const patch = asObject(body);
        const unknown = Object.keys(patch).filter((k) => k !== 'bootDelayMs');
        if (unknown.length > 0) throw new HttpError(400, `unknown settings: ${unknown.join(', ')}`);
        return send(res, 200, this.state.setSettings(patch as Partial<Settings>));
      }
      throw new HttpError(405, `${method} not allowed on /settings`);
    }

    const fault = this.state.nextApiFault();
    if (fault) {
      res.setHeader('Retry-After', '1');
      return send(res, fault.status, { error: fault.message });
    }

    if (top === 'groups' && rest.length === 0) {
      if (id === undefined) {
        if (method === 'GET') {
          return send(res, 200, this.state.listGroups(url.searchParams.get('cluster') ?? undefined));
        }
        if (method === 'POST') {
          const spec = asObject(body);
          const group = this.state.addGroup(spec as unknown as GroupSpec);
          const size = spec.size === undefined ? 0 : Number(spec.size);
          if (!Number.isInteger(size) || size < 0)
            throw new HttpError(400, 'size must be a whole number >= 0');
          for (let i = 0; i < size; i++) this.state.createInstance(group.id, now);
          return send(res, 201, this.state.getGroup(group.id));
        }
      } else if (sub === undefined) {
        if (method === 'GET') return send(res, 200, this.mustGroup(id));
      } else if (sub === 'image') {
        if (method === 'GET') return send(res, 200, { image: this.mustGroup(id).launchImage });
        if (method === 'PUT') {
          const b = asObject(body);
          if (typeof b.image !== 'string' || !b.image) throw new HttpError(400, 'body needs "image"');
          const kv = typeof b.kubernetesVersion === 'string' ? b.kubernetesVersion : undefined;
          return send(res, 200, this.state.setGroupImage(id, b.image, kv));
        }
      } else if (sub === 'instances') {
        this.mustGroup(id);
        if (method === 'GET') return send(res, 200, this.state.listInstances(id));
        if (method === 'POST') return send(res, 201, this.state.createInstance(id, now));
      }
      throw new HttpError(405, `${method} not allowed on ${url.pathname}`);
    }

    if (top === 'instances' && sub === undefined) {
      if (id === undefined) {
        if (method === 'GET') return send(res, 200, this.state.listInstances());
      } else if (method === 'GET') {
        const i = this.state.getInstance(id);
        if (!i) throw new HttpError(404, `no instance "${id}"`);
        return send(res, 200, i);
      } else if (method === 'DELETE') {
        const i = this.state.deleteInstance(id, now);
        if (!i) throw new HttpError(404, `no instance "${id}"`);
        return send(res, 200, i);
      }
      throw new HttpError(405, `${method} not allowed on ${url.pathname}`);
    }
    throw new HttpError(404, `no route ${method} ${url.pathname}`);
  }

  private mustGroup(id: string): ScalingGroup {
    const g = this.state.getGroup(id);
    if (!g) throw new HttpError(404, `no group "${id}"`);
    return g;
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function asObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
