// The simulated BMC fleet as an add-on of a local cluster: `cluster up`
// starts its process (detached; the CLI exits), racks the physical machines
// `--bare-metal-hosts` asks for that are not there yet, publishes the fleet's
// endpoint and certificate, and puts each physical machine into the cluster as
// metal3 expects (cluster-hosts.ts); `down` and `delete` stop it. Its state
// persists in the add-on's folder. The bare-metal capability lists this value.

import { KubeClient } from '../../../runtime/client.ts';
import { KubeConfig } from '../../../runtime/kubeconfig.ts';
import type { InfraContext, SimulatedInfrastructure } from '../index.ts';
import { previousPort, startDaemon, stopDaemon } from '../kit/daemon.ts';
import { findEndpoint, publishEndpoint } from '../kit/discovery.ts';
import { nodeScript } from '../kit/process.ts';
import { type ConsoleTarget, consoleRequest } from './api.ts';
import { bmcCommand } from './cli.ts';
import { applyPhysicalHosts } from './cluster-hosts.ts';
import { parsePhysicalHosts, planPhysicalHosts } from './physical-hosts.ts';
import { type BmcConfig, bmcDaemon, runningBmcEndpoint } from './process-main.ts';
import { BMC_SIMULATOR, consolePaths, FLEET_CA_KEY, FLEET_ENDPOINT_KEY, type Machine } from './protocol.ts';
import { readCertificate } from './tls.ts';

export const HOSTS_FLAG = 'bare-metal-hosts';

export const simulatedBmcFleet: SimulatedInfrastructure = {
  name: BMC_SIMULATOR,

  upFlags: {
    [HOSTS_FLAG]: {
      placeholder: 'N[:racks=R]',
      help: [
        'rack N physical machines behind the simulated BMC fleet, in R racks (default 1),',
        'each a BareMetalHost in namespace metal3; e.g. 24:racks=4 (kept across down/up; see nodewarden bmc)',
      ],
    },
  },

  command: {
    name: 'bmc',
    summary: "a local cluster's simulated BMC fleet: machines, power, faults",
    run: bmcCommand,
  },

  async up(ctx: InfraContext): Promise<void> {
    const flag = ctx.flags?.[HOSTS_FLAG];
    const wanted = flag === undefined ? [] : planPhysicalHosts(ctx.cluster, parsePhysicalHosts(flag));
    const target = await startFleet(ctx);

    const before = await consoleRequest<Machine[]>(target, 'GET', consolePaths.machines);
    const known = new Set(before.map((m) => m.id));
    const added = wanted.filter((spec) => !known.has(spec.id));
    for (const spec of added) await consoleRequest(target, 'POST', consolePaths.machines, spec);
    if (added.length > 0) ctx.progress?.(`racked ${added.length} simulated bare-metal machines`);

    const kc = new KubeConfig();
    kc.loadFromFile(ctx.kubeconfig);
    const client = KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-cluster' });
    try {
      const published = await findEndpoint(client, BMC_SIMULATOR);
      await publishEndpoint(client, BMC_SIMULATOR, {
        [FLEET_ENDPOINT_KEY]: target.endpoint,
        [FLEET_CA_KEY]: target.ca ?? '',
      });
      // Hosts are (re)applied when asked for, or when the port moved: their BMC addresses name it.
      if (flag !== undefined || published?.endpoint !== target.endpoint) {
        const machines = await consoleRequest<Machine[]>(
          target,
          'GET',
          `${consolePaths.machines}?kind=physical`,
        );
        const n = await applyPhysicalHosts(client, machines);
        if (n > 0) ctx.progress?.(`${n} BareMetalHosts in namespace metal3`);
      }
    } finally {
      client.close();
    }
    ctx.progress?.(`simulated BMC fleet at ${target.endpoint}`);
  },

  async down(ctx: InfraContext): Promise<void> {
    await stopDaemon(bmcDaemon(ctx.dir));
  },

  async endpoint(ctx: InfraContext): Promise<string | undefined> {
    return runningBmcEndpoint(ctx.dir);
  },

  async summary(ctx: InfraContext): Promise<string | undefined> {
    const endpoint = runningBmcEndpoint(ctx.dir);
    if (!endpoint) return undefined;
    const ca = readCertificate(ctx.dir)?.cert;
    const machines = await consoleRequest<Machine[]>(
      ca ? { endpoint, ca } : { endpoint },
      'GET',
      consolePaths.machines,
    );
    return describeFleet(machines);
  },
};

/** The running fleet, started first if needed (on its last port when free). */
async function startFleet(ctx: InfraContext): Promise<ConsoleTarget> {
  const d = bmcDaemon(ctx.dir);
  let endpoint = runningBmcEndpoint(ctx.dir);
  if (!endpoint) {
    const port = previousPort(d);
    const config: BmcConfig = { cluster: ctx.cluster, ...(port ? { preferredPort: port } : {}) };
    endpoint = await startDaemon(d, { entry: nodeScript(import.meta.url, './entry'), config });
  }
  const ca = readCertificate(ctx.dir)?.cert;
  return ca ? { endpoint, ca } : { endpoint };
}

/** "24 machines in 4 racks, 2 VMs on 1 hypervisor; 20 on" — the fleet in one line. */
export function describeFleet(machines: readonly Machine[]): string {
  const physical = machines.filter((m) => m.kind === 'physical');
  const vms = machines.filter((m) => m.kind === 'vm');
  const racks = new Set(physical.map((m) => m.rack ?? ''));
  const hypervisors = new Set(vms.map((m) => m.hypervisor ?? ''));
  const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
  const parts = [`${plural(physical.length, 'machine')} in ${plural(racks.size, 'rack')}`];
  if (vms.length) parts.push(`${plural(vms.length, 'VM')} on ${plural(hypervisors.size, 'hypervisor')}`);
  const on = machines.filter((m) => m.power === 'On').length;
  return `${parts.join(', ')}; ${on} on`;
}
