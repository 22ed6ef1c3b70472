// Where VMs are defined: the seam between the controller and whatever runs
// them. In a local cluster that is the simulated BMC fleet (fleet.ts), which
// gives each VM a Redfish System as the anchor's agent does with libvirt and
// sushy-tools; unit tests pass a fake.
import type { Machine, MachineSpec } from '../../cluster/infra/bmc/protocol.ts';

export type { Machine, MachineSpec };

export interface Hypervisor {
  /** Defines the VM, or finds it defined with the same spec (idempotent); answers with its BMC address. */
  define(spec: MachineSpec): Promise<Machine>;
  /** Removes the VM; one that is not there is no error. */
  remove(id: string): Promise<void>;
  list(): Promise<Machine[]>;
}

/** A hypervisor call that failed in a way retrying later may mend (unreachable, 5xx) or not (409: another spec). */
export class HypervisorError extends Error {
  readonly retryable: boolean;
  /** The HTTP status, when the hypervisor answered. */
  readonly status: number | undefined;
  constructor(message: string, retryable: boolean, status?: number) {
    super(message);
    this.name = 'HypervisorError';
    this.retryable = retryable;
    this.status = status;
  }
}
