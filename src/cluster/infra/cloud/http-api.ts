// The simulated cloud's HTTP API: a small JSON service over CloudState, on
// loopback, that the operator's SimulatedCloudProvider talks to as it would to
// a real cloud (wire types in protocol.ts). With a NodeSync, instances that
// become Ready appear in the cluster as kwok-managed Nodes and disappear when
// they are deleted.
//
//   GET    /groups[?cluster=ID]            list groups
//   POST   /groups                         create a group (GroupSpec, optional "size")
//   GET    /groups/:id                     one group
//   GET    /groups/:id/image               {"image"}
//   PUT    /groups/:id/image               {"image", "kubernetesVersion"?}
//   GET    /groups/:id/instances           the group's instances (Terminated included)
//   POST   /groups/:id/instances           add one instance (201)
//   GET    /instances                      every instance
//   GET    /instances/:providerID          one instance (URL-encoded providerID)
//   DELETE /instances/:providerID          terminate it (idempotent; 404 if never known)
//   GET    /faults, POST /faults           read / merge fault settings ({"clear": true} resets)
//   GET    /settings, POST /settings       read / change runtime settings: {"bootDelayMs": 1000}
//                                          (instances already booting keep their time)
//
// /faults and /settings are the operator's console, not the cloud's API: the
// injected API faults never hit them.
import http from 'node:http';
import { HttpError } from '../../../runtime/http.ts';
import { listen } from '../../../runtime/listen.ts';
import { apiFaultGuard } from '../kit/faults.ts';
import { objectBody, RouteTable, reply } from '../kit/routes.ts';
import type { NodeSync } from './node-sync.ts';
import {
  CloudState,
  CloudStateError,
  type CloudStateOptions,
  type FaultsPatch,
  type GroupSpec,
  type ScalingGroup,
  type Settings,
} from './state.ts';

export { GROUP_LABEL, IMAGE_LABEL, instanceNode, NodeSync, type NodeSyncOptions } from './node-sync.ts';

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
    this.server = http.createServer(cloudRoutes(this.state, this.clock).listener);
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
}

/** The cloud's routes over a state; boots due by the clock are advanced before every call. */
export function cloudRoutes(state: CloudState, clock: () => number): RouteTable {
  const mustGroup = (id: string | undefined): ScalingGroup => {
    const g = state.getGroup(id ?? '');
    if (!g) throw new HttpError(404, `no group "${id}"`);
    return g;
  };
  const ok = (body: unknown) => reply(200, body);
  const open = { open: true };
  return (
    new RouteTable({
      beforeEach: () => state.tick(clock()),
      guard: apiFaultGuard(state),
      statusOf: (err) => (err instanceof CloudStateError ? err.status : undefined),
    })
      // The console.
      .add('GET', '/faults', () => ok(state.getFaults()), open)
      .add(
        'POST',
        '/faults',
        ({ body }) => {
          const patch = objectBody(body);
          if (patch.clear === true) state.clearFaults();
          const { clear: _, ...faults } = patch;
          return ok(state.setFaults(faults as FaultsPatch));
        },
        open,
      )
      .add('GET', '/settings', () => ok(state.getSettings()), open)
      .add(
        'POST',
        '/settings',
        ({ body }) => {
          const patch = objectBody(body);
          const unknown = Object.keys(patch).filter((k) => k !== 'bootDelayMs');
          if (unknown.length > 0) throw new HttpError(400, `unknown settings: ${unknown.join(', ')}`);
          return ok(state.setSettings(patch as Partial<Settings>));
        },
        open,
      )
      // The cloud's API.
      .add('GET', '/groups', ({ url }) => ok(state.listGroups(url.searchParams.get('cluster') ?? undefined)))
      .add('POST', '/groups', ({ body }) => {
        const spec = objectBody(body);
        const group = state.addGroup(spec as unknown as GroupSpec);
        const size = spec.size === undefined ? 0 : Number(spec.size);
        if (!Number.isInteger(size) || size < 0) throw new HttpError(400, 'size must be a whole number >= 0');
        const now = clock();
        for (let i = 0; i < size; i++) state.createInstance(group.id, now);
        return reply(201, state.getGroup(group.id));
      })
      .add('GET', '/groups/:id', ({ params }) => ok(mustGroup(params.id)))
      .add('GET', '/groups/:id/image', ({ params }) => ok({ image: mustGroup(params.id).launchImage }))
      .add('PUT', '/groups/:id/image', ({ params, body }) => {
        const b = objectBody(body);
        if (typeof b.image !== 'string' || !b.image) throw new HttpError(400, 'body needs "image"');
        const kv = typeof b.kubernetesVersion === 'string' ? b.kubernetesVersion : undefined;
        return ok(state.setGroupImage(params.id ?? '', b.image, kv));
      })
      .add('GET', '/groups/:id/instances', ({ params }) => {
        mustGroup(params.id);
        return ok(state.listInstances(params.id));
      })
      .add('POST', '/groups/:id/instances', ({ params }) => {
        mustGroup(params.id);
        return reply(201, state.createInstance(params.id ?? '', clock()));
      })
      .add('GET', '/instances', () => ok(state.listInstances()))
      .add('GET', '/instances/:providerID', ({ params }) => {
        const i = state.getInstance(params.providerID ?? '');
        if (!i) throw new HttpError(404, `no instance "${params.providerID}"`);
        return ok(i);
      })
      .add('DELETE', '/instances/:providerID', ({ params }) => {
        const i = state.deleteInstance(params.providerID ?? '', clock());
        if (!i) throw new HttpError(404, `no instance "${params.providerID}"`);
        return ok(i);
      })
  );
}
