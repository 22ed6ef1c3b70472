// What a BareMetalHost needs next, decided from what was observed: the host's
// spec and recorded status, and its BMC's answer. Pure, so every transition of
// metal3's state machine is a row in a table test; the reconciler observes,
// calls planHost, and carries the plan out.
//
//   registering → inspecting → available ⇄ provisioning → provisioned → deprovisioning → available
//
// In available and provisioned the power is kept on spec.online. A power state
// that differs from the one we last recorded, while the spec did not move, was
// changed behind our back at the BMC: that is drift, reported and corrected
// (metal3 does the same at its resync).
import type { ProvisioningState } from '../../api/baremetal.ts';

export type PowerReading = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff' | 'Unknown';

/** Why a power change is made (Events and metrics switch on it). */
export type PowerCause = 'spec' | 'drift';

export type HostStep =
  | { kind: 'inspect' }
  | { kind: 'power'; on: boolean; cause: PowerCause }
  | { kind: 'reboot' }
  | { kind: 'provision'; image: string }
  | { kind: 'deprovision' };

export interface HostObservation {
  /** status.provisioning.state; '' for a new host. */
  state: string;
  /** spec.online (metal3's default: off). */
  online: boolean;
  /** spec.externallyProvisioned. */
  externallyProvisioned: boolean;
  /** spec.image.url, if any. */
  image: string | undefined;
  /** spec.image.format, if given (metal3: raw, qcow2, vdi, vmdk, live-iso). */
  imageFormat?: string | undefined;
  /** status.provisioning.image.url: what was written last, if any. */
  provisionedImage: string | undefined;
  /** status.poweredOn as recorded by the last reconcile. */
  recordedPower: boolean | undefined;
  /** What the BMC says now. */
  power: PowerReading;
  /** The reboot.metal3.io annotation is present. */
  rebootRequested: boolean;
}

/** Why a host's spec cannot be carried out here (a provisioning error until the spec changes). */
export type Refusal = { cause: 'diskImageNeedsIronic'; format: string };

export interface HostPlan {
  /** The provisioning state to record. */
  state: ProvisioningState;
  steps: HostStep[];
  /** Something is still moving (a power transition, a state just entered): look again soon. */
  soon: boolean;
  /** The spec asks for what only Ironic can do: nothing is done, and the host says why. */
  refused?: Refusal;
}

/** Image formats metal3 writes to the host's disk through Ironic's agent. */
const DISK_IMAGE_FORMATS = new Set(['raw', 'qcow2', 'vdi', 'vmdk']);

/** A disk image cannot be booted by virtual media; live-iso (or no format, as before) can. */
function refusalOf(o: HostObservation): Refusal | undefined {
  const format = o.imageFormat?.toLowerCase();
  return format && DISK_IMAGE_FORMATS.has(format) ? { cause: 'diskImageNeedsIronic', format } : undefined;
}

const settled = (p: PowerReading): p is 'On' | 'Off' => p === 'On' || p === 'Off';

/** Keeps the power on spec.online; a reboot request restarts a host that should be on. */
function powerSteps(o: HostObservation): { steps: HostStep[]; soon: boolean } {
  if (!settled(o.power)) return { steps: [], soon: true };
  const on = o.power === 'On';
  if (on !== o.online) {
    // We had it where the spec wants it, and now it is not: someone switched it at the BMC.
    const cause: PowerCause = o.recordedPower === o.online ? 'drift' : 'spec';
    return { steps: [{ kind: 'power', on: o.online, cause }], soon: true };
  }
  if (o.rebootRequested && o.online) return { steps: [{ kind: 'reboot' }], soon: true };
  return { steps: [], soon: false };
}

/** The next state and steps of a host whose BMC answered (registration passed). */
export function planHost(o: HostObservation): HostPlan {
  switch (o.state) {
    case '':
    case 'unmanaged':
    case 'registering':
      // The BMC answered with these credentials: registered.
      return { state: 'inspecting', steps: [], soon: true };
    case 'inspecting':
      return {
        state: o.externallyProvisioned ? 'externally provisioned' : 'available',
        steps: [{ kind: 'inspect' }],
        soon: true,
      };
    case 'available':
      if (o.externallyProvisioned) return { state: 'externally provisioned', steps: [], soon: true };
      if (o.image && refusalOf(o))
        return { state: 'available', steps: [], soon: false, refused: refusalOf(o) };
      if (o.image) return { state: 'provisioning', steps: [], soon: true };
      return { state: 'available', ...powerSteps(o) };
    case 'provisioning':
      if (!o.image) return { state: 'deprovisioning', steps: [], soon: true };
      if (refusalOf(o)) return { state: 'provisioning', steps: [], soon: false, refused: refusalOf(o) };
      return { state: 'provisioned', steps: [{ kind: 'provision', image: o.image }], soon: true };
    case 'provisioned':
      // A new image is written by deprovisioning first, as metal3 does.
      if (!o.image || o.image !== o.provisionedImage)
        return { state: 'deprovisioning', steps: [], soon: true };
      return { state: 'provisioned', ...powerSteps(o) };
    case 'deprovisioning':
      return { state: 'available', steps: [{ kind: 'deprovision' }], soon: true };
    case 'externally provisioned':
      if (!o.externallyProvisioned) return { state: 'available', steps: [], soon: true };
      return { state: 'externally provisioned', ...powerSteps(o) };
    default:
      // A state we do not drive (set by another controller): start over from registration.
      return { state: 'registering', steps: [], soon: true };
  }
}

/** metal3's error type for a failure in `state` (a failed power step is always a power management error). */
export function errorTypeFor(
  state: string,
  failed: HostStep['kind'] | 'read',
): 'registration error' | 'inspection error' | 'provisioning error' | 'power management error' {
  if (failed === 'power' || failed === 'reboot') return 'power management error';
  if (failed === 'inspect' || state === 'inspecting') return 'inspection error';
  if (failed === 'provision' || failed === 'deprovision') return 'provisioning error';
  return 'registration error';
}

/** Retry delay after `errorCount` consecutive failures: 2 s doubling, at most 5 minutes. */
export function errorBackoffMs(errorCount: number): number {
  return Math.min(2_000 * 2 ** Math.max(0, errorCount - 1), 300_000);
}
