// `nodewarden cloud status|groups|instances|faults|settings`: look at and steer
// the simulated cloud of a local cluster (what the rolling-upgrade controllers
// talk to); the add-on declares it as its console. `serve` runs the cloud's
// own process in the foreground (`cluster up` starts entry.ts instead).
import { asUsage, type CommandIO, STDIO } from '../../../cli/command.ts';
import { faultsVerb, printDocument, serveVerb, simulatorConsoleFlags } from '../../../cli/local-target.ts';
import { age, columns } from '../../../cli/progress.ts';
import {
  type CommandTable,
  DOCUMENT_OUTPUT,
  dispatch,
  type Invocation,
  type ObjectView,
  OUTPUT_FLAGS,
  outputFormat,
  writeObjects,
} from '../../../cli/verbs.ts';
import { runningSimulator } from '../kit/console-target.ts';
import { formatMs, parseBootDelay } from '../kit/delays.ts';
import { describeApiFaults } from '../kit/faults.ts';
import { cloudRequest } from './api.ts';
import { runningCloudEndpoint, serveCloud } from './process-main.ts';
import type { Faults, Instance, ScalingGroup, Settings } from './state.ts';

// Moved down to the kit (the hypervisor reads boot delays too); still exported here for its callers.
export { parseBootDelay };

const FAULT_EXAMPLES = `e.g. --set '{"neverJoinNext": {"worker": 1}}', '{"throttleProbability": 0.2}'
keys: neverJoinNext, neverJoinProbability, slowBootMs, failNextCalls,
      throttleNextCalls, throttleProbability, slowCallsMs`;

// Verbs that print one document (the status, the faults, the settings) take no -o wide or name.
const DOCUMENT = { output: DOCUMENT_OUTPUT };

/**
 * The command as a table. The cloud belongs to a cluster, given with --cluster;
 * --name, everywhere the name of the object a command acts on, once named the
 * cluster here and is kept as a deprecated spelling of --cluster.
 */
export const CLOUD: CommandTable = {
  name: 'cloud',
  flags: {
    ...simulatorConsoleFlags('cloud'),
    ...OUTPUT_FLAGS,
    group: { type: 'string', value: 'ID', help: "one group's instances" },
    all: { type: 'boolean', help: 'every instance, Terminated ones too' },
    set: { type: 'string', value: 'JSON', help: `merge these faults\n${FAULT_EXAMPLES}` },
    clear: { type: 'boolean', help: 'remove every fault' },
    'boot-delay': { type: 'string', value: 'DURATION', help: 'change the boot delay (e.g. 1s, 500ms)' },
    dir: { type: 'string', value: 'DIR', help: 'the add-on folder to serve from' },
  },
  common: ['cluster', 'name', 'endpoint', 'kubeconfig', 'context'],
  verbs: {
    status: {
      summary: "the cloud's endpoint, its groups with their size and launch image, settings, faults",
      flags: ['output', 'json'],
      overrides: DOCUMENT,
      run: async (inv, { io }) => {
        const endpoint = cloudEndpoint(inv);
        const [groups, instances, settings, faults] = await Promise.all([
          cloudRequest<ScalingGroup[]>(endpoint, 'GET', '/groups'),
          cloudRequest<Instance[]>(endpoint, 'GET', '/instances'),
          cloudRequest<Settings>(endpoint, 'GET', '/settings'),
          cloudRequest<Faults>(endpoint, 'GET', '/faults'),
        ]);
        printDocument(io, inv, { endpoint, settings, faults, groups }, () =>
          [
            columns([
              ['endpoint', endpoint],
              ['boot delay', formatMs(settings.bootDelayMs)],
              ['faults', describeFaults(faults)],
            ]),
            '\n',
            groupTable(groups, instances, false),
          ].join(''),
        );
        return 0;
      },
    },
    groups: {
      summary: 'the scaling groups',
      flags: ['output', 'json'],
      run: async (inv, { io }) => {
        const endpoint = cloudEndpoint(inv);
        const [groups, instances] = await Promise.all([
          cloudRequest<ScalingGroup[]>(endpoint, 'GET', '/groups'),
          cloudRequest<Instance[]>(endpoint, 'GET', '/instances'),
        ]);
        writeObjects(io, outputFormat(inv), groups, {
          table: (shown, wide) => groupTable(shown, instances, wide),
          name: (g) => g.id,
          document: (shown) => shown,
        });
        return 0;
      },
    },
    instances: {
      summary: "the instances that are not Terminated (--all: every one; --group ID: one group's)",
      flags: ['group', 'all', 'output', 'json'],
      run: async (inv, { io }) => {
        const group = inv.string('group');
        const path = group ? `/groups/${encodeURIComponent(group)}/instances` : '/instances';
        const all = await cloudRequest<Instance[]>(cloudEndpoint(inv), 'GET', path);
        const shown = inv.flag('all') ? all : all.filter((i) => i.state !== 'Terminated');
        writeObjects(io, outputFormat(inv), shown, INSTANCES);
        return 0;
      },
    },
    faults: faultsVerb<Faults>({
      read: (inv) => cloudRequest(cloudEndpoint(inv), 'GET', '/faults'),
      set: (inv, patch) => cloudRequest(cloudEndpoint(inv), 'POST', '/faults', patch),
      clear: (inv) => cloudRequest(cloudEndpoint(inv), 'POST', '/faults', { clear: true }),
      describe: describeFaults,
      example: '{"neverJoinNext": {"worker": 1}}',
    }),
    settings: {
      summary: 'the runtime settings; --boot-delay DURATION changes the boot delay',
      flags: ['boot-delay', 'output', 'json'],
      overrides: DOCUMENT,
      run: async (inv, { io }) => {
        const delay = inv.string('boot-delay');
        const bootDelayMs = delay === undefined ? undefined : asUsage(() => parseBootDelay(delay));
        const endpoint = cloudEndpoint(inv);
        const settings =
          bootDelayMs === undefined
            ? await cloudRequest<Settings>(endpoint, 'GET', '/settings')
            : await cloudRequest<Settings>(endpoint, 'POST', '/settings', { bootDelayMs });
        printDocument(io, inv, settings, () => columns([['boot delay', formatMs(settings.bootDelayMs)]]));
        return 0;
      },
    },
    serve: serveVerb('cloud', serveCloud),
  },
};

export function cloudCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(CLOUD, args, io);
}

/** The instances: one a line, -o name their node names; wide adds Kubernetes version and rack. */
const INSTANCES: ObjectView<Instance> = {
  table: (shown, wide) => instanceTable(shown, wide),
  name: (i) => i.nodeName,
  document: (shown) => shown,
};

/** The groups; wide adds their machines' shape (cpu, memory, pods), racks per zone and cluster. */
function groupTable(groups: readonly ScalingGroup[], instances: Instance[], wide: boolean): string {
  const rows = groups.map((g) => {
    const live = instances.filter((i) => i.groupId === g.id && i.state !== 'Terminated');
    const ready = live.filter((i) => i.state === 'Ready').length;
    return [
      g.id,
      g.role,
      String(live.length),
      String(ready),
      g.launchImage,
      g.kubernetesVersion,
      g.instanceType,
      g.zones.join(','),
      ...(wide ? [g.cpu, g.memory, String(g.pods), String(g.racksPerZone ?? '-'), g.cluster] : []),
    ];
  });
  const head = ['GROUP', 'ROLE', 'SIZE', 'READY', 'IMAGE', 'KUBERNETES', 'TYPE', 'ZONES'];
  if (wide) head.push('CPU', 'MEMORY', 'PODS', 'RACKS', 'CLUSTER');
  return columns([head, ...rows]);
}

function instanceTable(instances: readonly Instance[], wide: boolean, now = Date.now()): string {
  const rows = instances.map((i) => [
    i.nodeName,
    i.groupId,
    i.state,
    i.image,
    ...(wide ? [i.kubernetesVersion] : []),
    i.zone,
    ...(wide ? [i.rack ?? '-'] : []),
    age(new Date(i.createdAt).toISOString(), now),
    i.providerID,
  ]);
  const head = wide
    ? ['NODE', 'GROUP', 'STATE', 'IMAGE', 'KUBERNETES', 'ZONE', 'RACK', 'AGE', 'PROVIDER ID']
    : ['NODE', 'GROUP', 'STATE', 'IMAGE', 'ZONE', 'AGE', 'PROVIDER ID'];
  return columns([head, ...rows]);
}

/** The faults in force, in a line; "none" when there are none. */
export function describeFaults(f: Faults): string {
  const parts: string[] = [];
  const never = Object.entries(f.neverJoinNext).map(([g, n]) => `${g}=${n}`);
  if (never.length) parts.push(`next instances never join: ${never.join(', ')}`);
  if (f.neverJoinProbability) parts.push(`never join with p=${f.neverJoinProbability}`);
  if (f.slowBootMs) parts.push(`boots ${formatMs(f.slowBootMs)} slower`);
  parts.push(...describeApiFaults(f));
  return parts.length ? parts.join('; ') : 'none';
}

/**
 * Where the cloud answers: --endpoint; else the cloud of the cluster --cluster
 * (or $NODEWARDEN_CLUSTER) names; else of the local cluster the kubeconfig's
 * current context points at, as every other command finds its cluster.
 */
function cloudEndpoint(inv: Invocation): string {
  return (
    inv.string('endpoint') ??
    runningSimulator(inv, { name: 'cloud', title: 'simulated cloud', running: runningCloudEndpoint }).endpoint
  );
}
