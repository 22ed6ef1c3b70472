// The capabilities nodewarden ships, in the order their controllers start. The
// operator, the nodewarden command, `make manifests` and the local cluster
// iterate this list; adding a capability is one line here, then `make manifests`
// (its CRDs, RBAC and webhooks, the samples' list and the command index).
import type { AnyCustomResource } from './api/index.ts';
import { baremetal } from './baremetal/capability.ts';
import type { AnyCapability, CommandSpec, ControllerSpec, WebhookSpec } from './capability.ts';
import type { SimulatedInfrastructure } from './cluster/infra/index.ts';
import { kvm } from './kvm/capability.ts';
import { maintenance } from './maintenance/capability.ts';
import { tenant } from './tenant/capability.ts';
import { upgrade } from './upgrade/capability.ts';

export const capabilities: readonly AnyCapability[] = [maintenance, upgrade, baremetal, tenant, kvm];

/** Every custom resource the capabilities ship. */
export function customResourcesOf(list: readonly AnyCapability[]): AnyCustomResource[] {
  return list.flatMap((c) => [...c.customResources]);
}

/** Every controller, each named once across the capabilities. */
export function controllersOf(list: readonly AnyCapability[]): ControllerSpec<unknown>[] {
  const all = list.flatMap((c) => [...c.controllers]);
  const seen = new Set<string>();
  for (const c of all) {
    if (seen.has(c.name)) throw new Error(`controller "${c.name}" is declared twice`);
    seen.add(c.name);
  }
  return all;
}

export function webhooksOf(list: readonly AnyCapability[]): WebhookSpec[] {
  return list.flatMap((c) => [...(c.webhooks ?? [])]);
}

/** The simulated infrastructure a local cluster carries for these capabilities, each once (loads it). */
export async function simulatorsOf(list: readonly AnyCapability[]): Promise<SimulatedInfrastructure[]> {
  const byName = new Map<string, SimulatedInfrastructure>();
  for (const c of list) for (const s of (await c.infrastructure?.()) ?? []) byName.set(s.name, s);
  return [...byName.values()];
}

/** The capabilities' own commands and their simulators' consoles (loading the simulators). */
export async function commandsOf(list: readonly AnyCapability[]): Promise<CommandSpec[]> {
  const consoles = (await simulatorsOf(list)).flatMap((s) => (s.command ? [s.command] : []));
  return [...list.flatMap((c) => [...(c.commands ?? [])]), ...consoles];
}

export const customResources = customResourcesOf(capabilities);
export const controllers = controllersOf(capabilities);
