// Makes (or mends) one VM whose addresses are already held: its networkData
// rendered, the VM defined on its node's hypervisor (which answers with its
// Redfish address), its two Secrets and its BareMetalHost applied. A VM whose host,
// Secrets and labels are already as wanted costs no request at all.
import { Buffer } from 'node:buffer';
import { type BareMetalHost, BareMetalHosts } from '../../api/baremetal.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { CacheReader } from '../../runtime/host.ts';
import { type K8sObject, Secrets } from '../../runtime/resources.ts';
import type { HypervisorAddresses } from './addresses.ts';
import {
  type HeldVm,
  type Hypervisor,
  HypervisorError,
  type Hypervisors,
  type VmDefinition,
} from './hypervisors/hypervisor.ts';
import { defaultNetworkData, type NicAddress, renderTemplate } from './network-data.ts';
import {
  bareMetalHostOf,
  bootNic,
  credentialsSecret,
  credentialsSecretOf,
  hostLabels,
  hostUpToDate,
  networkDataSecret,
  networkDataSecretOf,
  type Pool,
  vmDefinition,
} from './objects.ts';
import type { DesiredVm } from './plan.ts';

export interface VmContext {
  client: KubeClient;
  cache: CacheReader;
  events: EventRecorder;
  hypervisors: Hypervisors;
  pool: Pool;
}

export type VmOutcome =
  | { kind: 'made'; host: BareMetalHost }
  /** Its old host is still being deleted (a quick scale down and up): next round. */
  | { kind: 'waiting' }
  | { kind: 'error'; reason: 'NetworkDataError' | 'HypervisorError'; message: string };

type Secret = K8sObject & { data?: Record<string, string> };

export async function makeVm(
  c: VmContext,
  vm: DesiredVm,
  nics: readonly NicAddress[],
  host: BareMetalHost | undefined,
  hypervisor: HypervisorAddresses | undefined,
  nodeLabels: Record<string, string>,
  /**
   * The VM as its hypervisor lists it: null when the hypervisor answered without it (its
   * libvirtd lost its domains: the VM is defined again), undefined when it was not asked.
   */
  held?: HeldVm | null,
): Promise<VmOutcome> {
  const { pool } = c;
  const ns = pool.metadata.namespace!;
  if (host?.metadata.deletionTimestamp) return { kind: 'waiting' };
  const flavor = pool.spec.nodes.find((f) => f.name === vm.flavor)!;
  const boot = bootNic(flavor, nics);
  const labels = hostLabels(pool, vm, flavor, nodeLabels);
  const rootDeviceName = flavor.rootDeviceName ?? '/dev/vda';
  const creds = credentialsSecretOf(pool, vm);
  // spec.online is the host's user's (`baremetal power`, a tenant cluster): a host keeps its own.
  const online = host ? host.spec.online === true : true;

  const haveCreds = c.cache.get<Secret>(Secrets, credentialsSecret(vm.name), ns);
  const haveData = c.cache.get<Secret>(Secrets, networkDataSecret(vm.name), ns);
  const onHypervisor = held === undefined || held?.redfishAddress === host?.spec.bmc?.address;
  if (host?.spec.bmc?.address && haveData && sameData(haveCreds, creds) && onHypervisor) {
    const want = bareMetalHostOf(pool, vm, {
      labels,
      bmcAddress: host.spec.bmc.address,
      bootMAC: boot.mac,
      rootDeviceName,
      online,
    });
    if (hostUpToDate(host, want)) return { kind: 'made', host };
  }

  let networkData: string;
  try {
    networkData = await renderNetworkData(c, vm, flavor.networkDataTemplate, nics, hypervisor);
  } catch (err) {
    return { kind: 'error', reason: 'NetworkDataError', message: (err as Error).message };
  }
  let bmcAddress: string;
  try {
    bmcAddress = (await defineVm(c.hypervisors.of(vm.node), vmDefinition(pool, vm, flavor, nics), !host))
      .redfishAddress;
  } catch (err) {
    if (!(err instanceof HypervisorError)) throw err;
    c.events.warning(pool, 'HypervisorError', 'DefineVM', `${vm.name}: ${err.message}`);
    return { kind: 'error', reason: 'HypervisorError', message: err.message };
  }
  const apply = (type: typeof Secrets, obj: K8sObject) =>
    c.client.patch(type, obj.metadata!.name!, ns, obj, { type: 'apply', force: true });
  await apply(Secrets, creds);
  await apply(Secrets, networkDataSecretOf(pool, vm, networkData));
  const want = bareMetalHostOf(pool, vm, { labels, bmcAddress, bootMAC: boot.mac, rootDeviceName, online });
  const made = await c.client.patch<BareMetalHost>(BareMetalHosts.type, vm.name, ns, want, {
    type: 'apply',
    force: true,
  });
  if (host) c.events.normal(pool, 'HostUpdated', 'UpdateHost', `${vm.name} brought back to the pool's spec`);
  else
    c.events.normal(
      pool,
      'HostCreated',
      'CreateHost',
      `${vm.name} on ${vm.node}: ${nics.map((n) => `${n.nic} ${n.ip} ${n.mac}`).join(', ')}; BMC ${bmcAddress}`,
    );
  return { kind: 'made', host: made };
}

/**
 * Defines the VM. One of that id defined another way (409) is left from an
 * earlier round that never made its host (the flavor changed since, or the
 * operator stopped midway): when no host uses it, it is replaced.
 */
async function defineVm(hv: Hypervisor, vm: VmDefinition, unused: boolean) {
  try {
    return await hv.define(vm);
  } catch (err) {
    if (!(err instanceof HypervisorError && err.status === 409 && unused)) throw err;
    await hv.remove(vm.id);
    return hv.define(vm);
  }
}

function sameData(have: Secret | undefined, want: K8sObject): boolean {
  const w = (want as Secret).data ?? {};
  return !!have && Object.entries(w).every(([k, v]) => have.data?.[k] === v);
}

async function renderNetworkData(
  c: VmContext,
  vm: DesiredVm,
  template: { name: string; namespace?: string } | undefined,
  nics: readonly NicAddress[],
  hypervisor: HypervisorAddresses | undefined,
): Promise<string> {
  const { pool } = c;
  const input = {
    vm: {
      name: vm.name,
      namespace: pool.metadata.namespace!,
      pool: pool.metadata.name!,
      node: vm.node,
      flavor: vm.flavor,
      index: vm.index,
      bootMAC: bootNic(pool.spec.nodes.find((f) => f.name === vm.flavor)!, nics).mac,
    },
    nics,
    networks: pool.spec.networks,
    bridgeIPs: Object.fromEntries(Object.entries(hypervisor?.bridge ?? {}).map(([k, v]) => [k, v.ip])),
  };
  if (!template) return defaultNetworkData(input);
  const ns = template.namespace ?? pool.metadata.namespace!;
  let secret: Secret;
  try {
    secret = await c.client.get<Secret>(Secrets, template.name, ns);
  } catch (err) {
    if (isNotFound(err))
      throw new Error(
        `networkDataTemplate Secret ${ns}/${template.name} not found: create it with a key "template"`,
      );
    throw err;
  }
  const text = secret.data?.template;
  if (text === undefined)
    throw new Error(`networkDataTemplate Secret ${ns}/${template.name} has no key "template"`);
  try {
    return renderTemplate(Buffer.from(text, 'base64').toString(), input);
  } catch (err) {
    throw new Error(`networkDataTemplate ${ns}/${template.name}: ${(err as Error).message}`);
  }
}
