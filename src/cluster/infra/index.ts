// Simulated infrastructure that a local cluster can carry besides its nodes:
// the place where capabilities plug in a cloud API with scaling groups
// (rolling upgrades), a hypervisor (KVM workload clusters) and baseboard
// management controllers (bare-metal hosts). A capability lists its add-ons as
// values and whoever opens local clusters passes them in (nothing registers
// itself by being imported). Each add-on is started after the control plane
// is Ready and stopped before it goes down; one that runs a process keeps its
// pid and logs under its own folder in the cluster's state folder, so `down`
// can stop it from a later CLI invocation (see kit/daemon.ts). `delete` stops
// every add-on before the cluster's folder goes. Types only.
import type { CommandSpec } from '../../cli/command.ts';
import type { Pool } from '../fleet.ts';

export interface InfraContext {
  /** The cluster's name. */
  cluster: string;
  /** Path to the cluster's admin kubeconfig. */
  kubeconfig: string;
  /** A folder of the add-on's own inside the cluster's state folder. */
  dir: string;
  /** The fleet the cluster was created with (its pools; nodes may have been replaced since). */
  pools: Pool[];
  /** The Kubernetes version the control plane and the fleet run. */
  kubernetesVersion: string;
  /** The add-on's own `cluster up` flags (see upFlags) given on this `up`, by name. */
  flags?: Readonly<Record<string, string | undefined>>;
  progress?: (message: string) => void;
}

/** A string flag an add-on adds to `nodewarden cluster up`. */
export interface UpFlag {
  /** What --help shows after the flag, e.g. "D". */
  placeholder: string;
  /** One or more lines for --help. */
  help: string | readonly string[];
}

export interface SimulatedInfrastructure {
  /** Short name, also the add-on's folder name, e.g. "cloud" or "hypervisor". */
  readonly name: string;
  /** Flags of `nodewarden cluster up` (without the dashes) the add-on reads from InfraContext.flags. */
  readonly upFlags?: Readonly<Record<string, UpFlag>>;
  /** The add-on's console, `nodewarden <name> ...`. */
  readonly command?: CommandSpec;
  up(ctx: InfraContext): Promise<void>;
  /** Stops the add-on's processes; its state stays in its folder for the next `up`. */
  down(ctx: InfraContext): Promise<void>;
  /** Where the add-on answers while it runs (for `cluster status`). */
  endpoint?(ctx: InfraContext): Promise<string | undefined>;
  /**
   * More ports of the host's loopback it answers on while it runs, besides its endpoint's (a
   * server per node, say): a cluster with real nodes publishes them to pods as it does the endpoint.
   */
  loopbackPorts?(ctx: InfraContext): Promise<number[]>;
  /** One line on what it holds while it runs, for `cluster status` (e.g. "24 machines in 4 racks, 20 on"). */
  summary?(ctx: InfraContext): Promise<string | undefined>;
}
