// `nodewarden hypervisor vms|clusters|faults|settings`: look at and steer the
// simulated hypervisor of a local cluster (what the KVM capability's VM pods
// run on); the add-on declares it as its console. `serve` runs its own process
// in the foreground (`cluster up` starts entry.ts instead).
import { asUsage, type CommandIO, STDIO } from '../../../cli/command.ts';
import { faultsVerb, printDocument, serveVerb, simulatorConsoleFlags } from '../../../cli/local-target.ts';
import { age, columns } from '../../../cli/progress.ts';
import {
  type CommandTable,
  DOCUMENT_OUTPUT,
  dispatch,
  type Invocation,
  OUTPUT_FLAGS,
  outputFormat,
  writeObjects,
} from '../../../cli/verbs.ts';
import { runningSimulator } from '../kit/console-target.ts';
import { formatMs, parseBootDelay } from '../kit/delays.ts';
import { hypervisorRequest } from './api.ts';
import { runningHypervisorEndpoint, serveHypervisor } from './process-main.ts';
import {
  consolePaths,
  HYPERVISOR_SIMULATOR,
  type HypervisorFaults,
  type HypervisorSettings,
  type Vm,
  type WorkloadControlPlane,
} from './protocol.ts';

const FAULT_EXAMPLES = `e.g. --set '{"neverBoot": ["worker-1-abc"]}', '{"die": ["worker-2-xyz"]}',
     '{"slowBoot": {"master-0-abc": 30000}}', '{"failNextBoots": 2}'
(pod names; lists and slowBoot are replaced whole)`;

const DOCUMENT = { output: DOCUMENT_OUTPUT };

export const HYPERVISOR: CommandTable = {
  name: HYPERVISOR_SIMULATOR,
  flags: {
    ...simulatorConsoleFlags('hypervisor'),
    ...OUTPUT_FLAGS,
    'workload-cluster': { type: 'string', value: 'ID', help: "one workload cluster's VMs" },
    set: { type: 'string', value: 'JSON', help: `merge these faults\n${FAULT_EXAMPLES}` },
    clear: { type: 'boolean', help: 'remove every fault' },
    'boot-delay': { type: 'string', value: 'DURATION', help: 'change the boot delay (e.g. 2s, 500ms)' },
    dir: { type: 'string', value: 'DIR', help: 'the add-on folder to serve from' },
  },
  common: ['cluster', 'name', 'endpoint', 'kubeconfig', 'context'],
  verbs: {
    vms: {
      summary: 'the VMs: one per VM pod, with its workload cluster, role, host and state',
      flags: ['workload-cluster', 'output', 'json'],
      run: async (inv, { io }) => {
        const id = inv.string('workload-cluster');
        const path = id ? `${consolePaths.vms}?cluster=${encodeURIComponent(id)}` : consolePaths.vms;
        const vms = await hypervisorRequest<Vm[]>(endpointOf(inv), 'GET', path);
        writeObjects(io, outputFormat(inv), vms, {
          table: (shown, wide) => vmTable(shown, wide),
          name: (v) => `${v.namespace}/${v.name}`,
          document: (shown) => shown,
          none: 'no VMs',
        });
        return 0;
      },
    },
    clusters: {
      summary: 'the workload clusters: their control plane, API server and kubeconfig Secret',
      flags: ['output', 'json'],
      run: async (inv, { io }) => {
        const endpoint = endpointOf(inv);
        const [clusters, vms] = await Promise.all([
          hypervisorRequest<WorkloadControlPlane[]>(endpoint, 'GET', consolePaths.clusters),
          hypervisorRequest<Vm[]>(endpoint, 'GET', consolePaths.vms),
        ]);
        writeObjects(io, outputFormat(inv), clusters, {
          table: (shown) => clusterTable(shown, vms),
          name: (c) => c.cluster,
          document: (shown) => shown,
          none: 'no workload clusters',
        });
        return 0;
      },
    },
    faults: faultsVerb<HypervisorFaults>({
      read: (inv) => hypervisorRequest(endpointOf(inv), 'GET', consolePaths.faults),
      set: (inv, patch) => hypervisorRequest(endpointOf(inv), 'PUT', consolePaths.faults, patch),
      clear: (inv) => hypervisorRequest(endpointOf(inv), 'DELETE', consolePaths.faults),
      describe: describeFaults,
      example: '{"die": ["worker-1-abc"]}',
    }),
    settings: {
      summary:
        'the runtime settings; --boot-delay DURATION changes the boot delay of VMs booting from now on',
      flags: ['boot-delay', 'output', 'json'],
      overrides: DOCUMENT,
      run: async (inv, { io }) => {
        const delay = inv.string('boot-delay');
        const bootDelayMs = delay === undefined ? undefined : asUsage(() => parseBootDelay(delay));
        const endpoint = endpointOf(inv);
        const settings =
          bootDelayMs === undefined
            ? await hypervisorRequest<HypervisorSettings>(endpoint, 'GET', consolePaths.settings)
            : await hypervisorRequest<HypervisorSettings>(endpoint, 'PUT', consolePaths.settings, {
                bootDelayMs,
              });
        printDocument(io, inv, settings, () => columns([['boot delay', formatMs(settings.bootDelayMs)]]));
        return 0;
      },
    },
    serve: serveVerb('hypervisor', serveHypervisor),
  },
};

export function hypervisorCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(HYPERVISOR, args, io);
}

function vmTable(vms: readonly Vm[], wide: boolean, now = Date.now()): string {
  const head = ['NAMESPACE', 'NAME', 'CLUSTER', 'ROLE', 'STATE', 'HOST', 'BOOTS'];
  const rows = vms.map((v) => [
    v.namespace,
    v.name,
    v.cluster,
    v.role,
    v.state,
    v.host || '-',
    bootColumn(v, now, wide),
  ]);
  return columns([head, ...rows]);
}

/** When it booted (an age) or boots (in how long); wide: the time itself. */
function bootColumn(v: Vm, now: number, wide: boolean): string {
  if (!v.bootsAt) return '-';
  if (wide) return new Date(v.bootsAt).toISOString();
  return v.bootsAt > now
    ? `in ${formatMs(v.bootsAt - now)}`
    : `${age(new Date(v.bootsAt).toISOString(), now)} ago`;
}

function clusterTable(clusters: readonly WorkloadControlPlane[], vms: readonly Vm[]): string {
  const rows = clusters.map((c) => {
    const mine = vms.filter((v) => v.cluster === c.cluster && v.state !== 'Off');
    const running = mine.filter((v) => v.state === 'Running').length;
    return [
      c.cluster,
      c.namespace ?? '-',
      c.state,
      `${running}/${mine.length}`,
      c.server ?? '-',
      c.kubeconfigSecret ?? '-',
    ];
  });
  return columns([['CLUSTER', 'NAMESPACE', 'CONTROL PLANE', 'VMS RUNNING', 'SERVER', 'KUBECONFIG'], ...rows]);
}

/** The faults in force, in a line; "none" when there are none. */
export function describeFaults(f: HypervisorFaults): string {
  const parts: string[] = [];
  if (f.neverBoot.length) parts.push(`never boot: ${f.neverBoot.join(', ')}`);
  if (f.die.length) parts.push(`dead: ${f.die.join(', ')}`);
  const slow = Object.entries(f.slowBoot).map(([n, ms]) => `${n}=${formatMs(ms)}`);
  if (slow.length) parts.push(`slow boots: ${slow.join(', ')}`);
  if (f.failNextBoots) parts.push(`next ${f.failNextBoots} VMs never boot`);
  return parts.length ? parts.join('; ') : 'none';
}

/** --endpoint; else the hypervisor of the local cluster --cluster (or the kubeconfig) names. */
function endpointOf(inv: Invocation): string {
  return (
    inv.string('endpoint') ??
    runningSimulator(inv, {
      name: HYPERVISOR_SIMULATOR,
      title: 'simulated hypervisor',
      running: runningHypervisorEndpoint,
    }).endpoint
  );
}
