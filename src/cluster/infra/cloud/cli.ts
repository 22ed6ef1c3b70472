// `nodewarden cloud status|groups|instances|faults|settings`: look at and steer
// the simulated cloud of a local cluster (what the rolling-upgrade controllers
// talk to); the add-on declares it as its console. `serve` runs the cloud's
// own process in the foreground (`cluster up` starts entry.ts instead).
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { age, columns } from '../../../cli/progress.ts';
import { infraDir } from '../../control-plane.ts';
import { describeApiFaults } from '../kit/faults.ts';
import { cloudRequest } from './api.ts';
import { runningCloudEndpoint, serveCloud } from './process-main.ts';
import type { Faults, Instance, ScalingGroup, Settings } from './state.ts';

const HELP = `Usage: nodewarden cloud <status|groups|instances|faults|settings> [flags]

  status       the cloud's endpoint, its groups with their size and launch image, settings, faults
  groups       the scaling groups
  instances    the instances that are not Terminated (--all: every one; --group ID: one group's)
  faults       the injected faults; --set JSON merges, --clear removes them all
               e.g. --set '{"neverJoinNext": {"worker": 1}}', '{"throttleProbability": 0.2}'
               keys: neverJoinNext, neverJoinProbability, slowBootMs, failNextCalls,
                     throttleNextCalls, throttleProbability, slowCallsMs
  settings     the runtime settings; --boot-delay DURATION (e.g. 1s, 500ms) changes the boot delay

Flags:
  --name NAME        the local cluster (default "nodewarden", or $NODEWARDEN_CLUSTER)
  --endpoint URL     talk to this cloud instead of the cluster's
  --json             machine-readable output`;

const OPTIONS = {
  name: { type: 'string' },
  endpoint: { type: 'string' },
  json: { type: 'boolean' },
  group: { type: 'string' },
  all: { type: 'boolean' },
  set: { type: 'string' },
  clear: { type: 'boolean' },
  'boot-delay': { type: 'string' },
  dir: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true });
}

export async function cloudCommand(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(args);
  } catch (err) {
    console.error(`nodewarden cloud: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [verb] = positionals;
  if (values.help || !verb) {
    console.log(HELP);
    return values.help ? 0 : 2;
  }
  if (verb === 'serve') {
    if (!values.dir) throw new Error('serve needs --dir (the add-on folder)');
    await serveCloud(values.dir);
    return 0;
  }
  const name = values.name ?? process.env.NODEWARDEN_CLUSTER ?? 'nodewarden';
  const endpoint = values.endpoint ?? clusterEndpoint(name);
  const json = values.json ?? false;
  const print = (data: unknown, text: () => string) => {
    process.stdout.write(json ? `${JSON.stringify(data, null, 2)}\n` : text());
  };

  switch (verb) {
    case 'status': {
      const [groups, instances, settings, faults] = await Promise.all([
        cloudRequest<ScalingGroup[]>(endpoint, 'GET', '/groups'),
        cloudRequest<Instance[]>(endpoint, 'GET', '/instances'),
        cloudRequest<Settings>(endpoint, 'GET', '/settings'),
        cloudRequest<Faults>(endpoint, 'GET', '/faults'),
      ]);
      print({ endpoint, settings, faults, groups }, () =>
        [
          columns([
            ['endpoint', endpoint],
            ['boot delay', formatMs(settings.bootDelayMs)],
            ['faults', describeFaults(faults)],
          ]),
          '\n',
          groupTable(groups, instances),
        ].join(''),
      );
      return 0;
    }
    case 'groups': {
      const [groups, instances] = await Promise.all([
        cloudRequest<ScalingGroup[]>(endpoint, 'GET', '/groups'),
        cloudRequest<Instance[]>(endpoint, 'GET', '/instances'),
      ]);
      print(groups, () => groupTable(groups, instances));
      return 0;
    }
    case 'instances': {
      const path = values.group ? `/groups/${encodeURIComponent(values.group)}/instances` : '/instances';
      const all = await cloudRequest<Instance[]>(endpoint, 'GET', path);
      const shown = values.all ? all : all.filter((i) => i.state !== 'Terminated');
      print(shown, () => instanceTable(shown));
      return 0;
    }
    case 'faults': {
      if (values.set !== undefined && values.clear) throw new Error('give --set or --clear, not both');
      let faults: Faults;
      if (values.clear) faults = await cloudRequest<Faults>(endpoint, 'POST', '/faults', { clear: true });
      else if (values.set !== undefined)
        faults = await cloudRequest<Faults>(endpoint, 'POST', '/faults', parseJson(values.set));
      else faults = await cloudRequest<Faults>(endpoint, 'GET', '/faults');
      print(faults, () => `${describeFaults(faults)}\n`);
      return 0;
    }
    case 'settings': {
      const delay = values['boot-delay'];
      const settings =
        delay === undefined
          ? await cloudRequest<Settings>(endpoint, 'GET', '/settings')
          : await cloudRequest<Settings>(endpoint, 'POST', '/settings', {
              bootDelayMs: parseBootDelay(delay),
            });
      print(settings, () => columns([['boot delay', formatMs(settings.bootDelayMs)]]));
      return 0;
    }
    default:
      console.error(`nodewarden cloud: unknown verb "${verb}"\n\n${HELP}`);
      return 2;
  }
}

function clusterEndpoint(name: string): string {
  const dir = infraDir(name, 'cloud');
  const endpoint = runningCloudEndpoint(dir);
  if (endpoint) return endpoint;
  throw new Error(
    existsSync(dir)
      ? `the simulated cloud of cluster "${name}" is not running: nodewarden cluster up --name ${name}`
      : `cluster "${name}" has no simulated cloud: nodewarden cluster up --name ${name}`,
  );
}

function groupTable(groups: ScalingGroup[], instances: Instance[]): string {
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
    ];
  });
  return columns([['GROUP', 'ROLE', 'SIZE', 'READY', 'IMAGE', 'KUBERNETES', 'TYPE', 'ZONES'], ...rows]);
}

function instanceTable(instances: Instance[], now = Date.now()): string {
  const rows = instances.map((i) => [
    i.nodeName,
    i.groupId,
    i.state,
    i.image,
    i.zone,
    age(new Date(i.createdAt).toISOString(), now),
    i.providerID,
  ]);
  return columns([['NODE', 'GROUP', 'STATE', 'IMAGE', 'ZONE', 'AGE', 'PROVIDER ID'], ...rows]);
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

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`--set takes a JSON object, e.g. '{"neverJoinNext": {"worker": 1}}', not ${text}`);
  }
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** A boot delay such as "5s", "500ms", "1m30s" or "0", in milliseconds. */
export function parseBootDelay(text: string): number {
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m)/g)];
  const whole = text === '0' || (parts.length > 0 && parts.map((p) => p[0]).join('') === text);
  if (!whole) throw new Error(`boot delay "${text}" is not a duration like 5s, 500ms or 1m`);
  return Math.round(parts.reduce((ms, p) => ms + Number(p[1]) * (UNIT_MS[p[2] ?? 's'] ?? 1000), 0));
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
