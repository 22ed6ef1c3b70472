// The simulated hypervisor as an add-on of a local cluster: `cluster up`
// starts its process (detached; the CLI exits) and publishes its console's
// endpoint; `cluster down` and `delete` stop it, and the workload clusters'
// control planes with it. Its state and those control planes persist in the
// add-on's folder. The KVM capability lists this value; nothing registers it.
import { KubeClient } from '../../../runtime/client.ts';
import { KubeConfig } from '../../../runtime/kubeconfig.ts';
import type { InfraContext, SimulatedInfrastructure } from '../index.ts';
import { previousPort, startDaemon, stopDaemon } from '../kit/daemon.ts';
import { parseBootDelay } from '../kit/delays.ts';
import { publishEndpoint } from '../kit/discovery.ts';
import { nodeScript } from '../kit/process.ts';
import { hypervisorRequest } from './api.ts';
import { hypervisorCommand } from './cli.ts';
import { stopLeftoverComponents } from './leftovers.ts';
import { type HypervisorConfig, hypervisorDaemon, runningHypervisorEndpoint } from './process-main.ts';
import {
  consolePaths,
  HYPERVISOR_ENDPOINT_KEY,
  HYPERVISOR_SIMULATOR,
  type Vm,
  type WorkloadControlPlane,
} from './protocol.ts';

export const BOOT_DELAY_FLAG = 'hypervisor-boot-delay';

// Stopping the daemon stops each workload control plane (kwokctl stop, a second or two each).
const STOP_GRACE_MS = 60_000;

export const simulatedHypervisor: SimulatedInfrastructure = {
  name: HYPERVISOR_SIMULATOR,

  upFlags: {
    [BOOT_DELAY_FLAG]: {
      placeholder: 'D',
      help: [
        'how long a VM of the simulated hypervisor takes to boot once its pod runs,',
        'e.g. 2s, 500ms (default 2s; kept across down/up; see nodewarden hypervisor)',
      ],
    },
  },

  command: {
    name: HYPERVISOR_SIMULATOR,
    summary: "a local cluster's simulated hypervisor: VMs, workload clusters, faults, settings",
    run: hypervisorCommand,
  },

  async up(ctx: InfraContext): Promise<void> {
    const flag = ctx.flags?.[BOOT_DELAY_FLAG];
    const bootDelayMs = flag === undefined ? undefined : parseBootDelay(flag);
    const d = hypervisorDaemon(ctx.dir);
    let endpoint = runningHypervisorEndpoint(ctx.dir);
    if (endpoint) {
      if (bootDelayMs !== undefined)
        await hypervisorRequest(endpoint, 'PUT', consolePaths.settings, { bootDelayMs });
    } else {
      const port = previousPort(d);
      const config: HypervisorConfig = {
        cluster: ctx.cluster,
        kubeconfig: ctx.kubeconfig,
        kubernetesVersion: ctx.kubernetesVersion,
        ...(bootDelayMs !== undefined ? { bootDelayMs } : {}),
        ...(port ? { preferredPort: port } : {}),
      };
      const entry = nodeScript(import.meta.url, './entry');
      // Waiting on watches and kwokctl, it never needs V8's optimizing compilers: lite mode
      // keeps ~10 MiB of RSS off it (measured from a build: 76 → 66 MiB idle, 80 → 68 MiB
      // with two workload clusters). Not from src/: Node strips types with WebAssembly,
      // which lite mode turns off. The daemon's code uses none (no fetch, whose parser is).
      if (entry.args.at(-1)?.endsWith('.js')) entry.args.unshift('--lite-mode');
      endpoint = await startDaemon(d, { entry, config });
    }
    await hypervisorRequest(endpoint, 'GET', consolePaths.settings); // it answers, not just listens
    const kc = new KubeConfig();
    kc.loadFromFile(ctx.kubeconfig);
    const client = KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-cluster' });
    try {
      await publishEndpoint(client, HYPERVISOR_SIMULATOR, { [HYPERVISOR_ENDPOINT_KEY]: endpoint });
    } finally {
      client.close();
    }
    ctx.progress?.(`simulated hypervisor at ${endpoint}`);
  },

  async down(ctx: InfraContext): Promise<void> {
    await stopDaemon(hypervisorDaemon(ctx.dir), STOP_GRACE_MS);
    // The daemon stops its control planes; one that died could not.
    const left = await stopLeftoverComponents(ctx.dir);
    if (left > 0) ctx.progress?.(`stopped ${left} workload control-plane processes the hypervisor left`);
  },

  async endpoint(ctx: InfraContext): Promise<string | undefined> {
    return runningHypervisorEndpoint(ctx.dir);
  },

  async summary(ctx: InfraContext): Promise<string | undefined> {
    const endpoint = runningHypervisorEndpoint(ctx.dir);
    if (!endpoint) return undefined;
    const [clusters, vms] = await Promise.all([
      hypervisorRequest<WorkloadControlPlane[]>(endpoint, 'GET', consolePaths.clusters),
      hypervisorRequest<Vm[]>(endpoint, 'GET', consolePaths.vms),
    ]);
    return describeHypervisor(clusters, vms);
  },
};

/** "3 workload clusters, 14 VMs, 12 running" — VMs that are off are not counted. */
export function describeHypervisor(clusters: readonly WorkloadControlPlane[], vms: readonly Vm[]): string {
  const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  const on = vms.filter((v) => v.state !== 'Off');
  const running = on.filter((v) => v.state === 'Running').length;
  return `${plural(clusters.length, 'workload cluster')}, ${plural(on.length, 'VM')}, ${running} running`;
}
