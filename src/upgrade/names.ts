// The names rolling upgrades write onto other objects: node annotations that
// carry the rollout's memory (so a restarted operator resumes from the cluster,
// not from its own state), and labels that mark what we created.
// Anchor: the constellation.edgeless.systems/{donor,heir,...} annotations.

import type { ScalingGroup } from '../api/upgrade.ts';

const P = 'upgrade.nodewarden.dev';

export const Upgrade = {
  group: P,
  annotations: {
    /** The cloud scaling group of the node, asked of the provider once. */
    scalingGroup: `${P}/scaling-group`,
    /** The image the node booted from, asked of the provider once. */
    image: `${P}/node-image`,
    /** On an heir: the outdated node it replaces. */
    donor: `${P}/donor`,
    /** On a donor: the new node that replaces it. */
    heir: `${P}/heir`,
    /** A surplus node to drain and delete. */
    obsolete: `${P}/obsolete`,
    /** On an heir, kept after its donor is gone: the node it replaced (never adopted again). */
    replaces: `${P}/replaces`,
    /** On a PendingNode: the target image the node was created for. */
    targetImage: `${P}/target-image`,
    /** On a donor: when it was paired (RFC 3339), for the replacement-duration metric. */
    pairedAt: `${P}/paired-at`,
    /** On a donor: how many drains of it failed so far. */
    drainFailures: `${P}/drain-failures`,
    /** On a donor: why its last drain failed. */
    drainLastError: `${P}/drain-last-error`,
    /** On a donor: no new drain before this time (RFC 3339): the retry backoff. */
    drainRetryAt: `${P}/drain-retry-at`,
    /** On an AutoscalingStrategy we paused: its spec.enabled before the rollout. */
    enabledBeforeRollout: `${P}/enabled-before-rollout`,
  },
  labels: {
    /** On NodeMaintenances and PendingNodes we created: the NodeVersion that made them. */
    nodeVersion: `${P}/node-version`,
  },
  /** On a NodeVersion: the autoscaler is given back before the object goes. */
  finalizer: `${P}/finalizer`,
  /** The NodeVersion `nodewarden upgrade` and discovered ScalingGroups use when none is named. */
  defaultNodeVersion: 'default',
} as const;

/** The NodeVersion a group follows: the one it names, or the default one. */
export function nodeVersionOf(sg: Pick<ScalingGroup, 'spec'>): string {
  return sg.spec.nodeVersion || Upgrade.defaultNodeVersion;
}
