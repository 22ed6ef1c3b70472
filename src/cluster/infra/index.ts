// Simulated infrastructure that a local cluster can carry besides its nodes:
// the place where later capabilities plug in a cloud API with scaling groups
// (rolling upgrades), a hypervisor (KVM workload clusters) and baseboard
// management controllers (bare-metal hosts). Each add-on is started after the
// control plane is Ready and stopped before it goes down; one that runs a
// process keeps its pid and logs under its own folder in the cluster's state
// folder, so `down` can stop it from a later CLI invocation (see process.ts).
// `delete` stops every add-on before the cluster's folder goes.
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
  /** How long a new simulated machine takes to boot, when given on this `cluster up`. */
  bootDelayMs?: number;
  progress?: (message: string) => void;
}

export interface SimulatedInfrastructure {
  /** Short name, also the add-on's folder name, e.g. "cloud" or "hypervisor". */
  readonly name: string;
  up(ctx: InfraContext): Promise<void>;
  /** Stops the add-on's processes; its state stays in its folder for the next `up`. */
  down(ctx: InfraContext): Promise<void>;
  /** Where the add-on answers while it runs (for `cluster status`). */
  endpoint?(ctx: InfraContext): Promise<string | undefined>;
}

const registry: SimulatedInfrastructure[] = [];

/** Capabilities call this at import time to have every local cluster carry their add-on. */
export function registerInfrastructure(addon: SimulatedInfrastructure): void {
  if (registry.some((a) => a.name === addon.name))
    throw new Error(`infrastructure "${addon.name}" registered twice`);
  registry.push(addon);
}

export function registeredInfrastructure(): readonly SimulatedInfrastructure[] {
  return registry;
}
