// What the rollout applier's unit tests share: a NodeVersion asking for img-2,
// the nodes and observed state of one worker group w on img-1, and an applier
// that writes to the fake client and cloud it is given.
import type { NodeVersion } from '../../../src/api/upgrade.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';
import type { EventRecorder } from '../../../src/runtime/events.ts';
import type { K8sObject } from '../../../src/runtime/resources.ts';
import { type ApplyDeps, RolloutApplier } from '../../../src/upgrade/controllers/apply.ts';
import type { CloudProvider } from '../../../src/upgrade/providers/interface.ts';
import type { ObservedNode, ObservedState, PendingView } from '../../../src/upgrade/rollout/classify.ts';

export const NOW = 1_000_000;

export const nv = {
  apiVersion: 'upgrade.nodewarden.dev/v1alpha1',
  kind: 'NodeVersion',
  metadata: { name: 'req', generation: 1, uid: 'u1' },
  spec: { image: 'img-2' },
} as NodeVersion & K8sObject;

/** A Ready worker of group w, outdated (img-1) unless `o` says otherwise. */
export const node = (name: string, o: Partial<ObservedNode> = {}): ObservedNode => ({
  name,
  providerID: `sim://${name}`,
  groupId: 'w',
  role: 'Worker',
  image: 'img-1',
  kubernetesVersion: 'v1.37.1',
  ready: true,
  ...o,
});

/** Group w (1 to 20 nodes) rolling to img-2 one surge at a time, as of NOW. */
export const observed = (nodes: ObservedNode[], pending: PendingView[] = []): ObservedState => ({
  nodes,
  pending,
  groups: [{ id: 'w', role: 'Worker', min: 1, max: 20, image: 'img-2' }],
  target: { image: 'img-2', kubernetesVersion: '' },
  strategy: { maxSurge: 1, maxUnavailable: 0, controlPlaneFirst: true, paused: false },
  now: NOW,
});

/** An applier of nv's round at NOW over `client` and `cloud`, with no drains and events and logs dropped. */
export function applier(
  client: KubeClient,
  cloud: CloudProvider,
  cached: ApplyDeps['node'] = () => undefined,
) {
  return new RolloutApplier(
    {
      client,
      cloud,
      events: { normal() {}, warning() {} } as unknown as EventRecorder,
      maintenance: () => undefined,
      node: cached,
    },
    nv,
    new Date(NOW),
    { debug() {}, info() {}, warn() {} } as never,
  );
}
