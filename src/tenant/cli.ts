// `nodewarden tenant`: the TenantClusters as a table (list), one cluster in
// detail — hosts per role and rack, services, conditions (status), and an
// Airship SIPCluster turned into a TenantCluster (convert).
import { readFile } from 'node:fs/promises';
import { parse as parseYaml, stringify } from 'yaml';
import { TENANT_ROLES, TenantClusterKind } from '../api/kinds.ts';
import type { TenantCluster } from '../api/tenant.ts';
import { type CommandIO, needsCrd, STDIO, UsageError } from '../cli/command.ts';
import { columns } from '../cli/progress.ts';
import {
  CONNECTION_FLAGS,
  type CommandTable,
  dispatch,
  type Invocation,
  kubeName,
  type ObjectView,
  OUTPUT_FLAGS,
  outputFormat,
  type VerbContext,
  writeObjects,
} from '../cli/verbs.ts';
import type { Conversion } from './convert.ts';

const T = TenantClusterKind;

export const TENANT: CommandTable = {
  name: 'tenant',
  common: ['kubeconfig', 'context', 'namespace'],
  flags: {
    ...CONNECTION_FLAGS,
    namespace: {
      type: 'string',
      short: 'n',
      value: 'NS',
      help: 'the TenantClusters of this namespace (default: all; status: default)',
    },
    ...OUTPUT_FLAGS,
    filename: { type: 'string', short: 'f', value: 'FILE', help: 'the SIPCluster to convert (- for stdin)' },
  },
  verbs: {
    list: {
      summary: 'the TenantClusters: ready, scheduled, services, hosts claimed of desired',
      flags: ['output', 'json'],
      run: (inv, ctx) => listVerb(inv, ctx),
    },
    status: {
      synopsis: 'NAME',
      summary: 'one TenantCluster: its hosts per role and rack, its services and conditions',
      args: { name: 'NAME', min: 1, max: 1 },
      flags: ['output', 'json'],
      run: (inv, ctx) => statusVerb(inv, ctx),
    },
    convert: {
      synopsis: '-f SIPCLUSTER.yaml',
      summary: 'turn an Airship SIPCluster into a TenantCluster (YAML on stdout, what was dropped on stderr)',
      flags: ['filename'],
      run: (inv, ctx) => convertVerb(inv, ctx),
    },
  },
  footer: 'Exit status: 0 done; 1 failed (or convert gave an invalid TenantCluster); 2 usage error.',
};

export async function tenantCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(TENANT, args, io);
}

const condition = (tc: TenantCluster, type: string) => tc.status?.conditions?.find((c) => c.type === type);

export function tenantTable(items: readonly TenantCluster[], wide: boolean): string {
  const head = [
    'NAMESPACE',
    'NAME',
    'READY',
    'SCHEDULED',
    'SERVICES',
    'HOSTS',
    ...(wide ? ['FAILED', 'REASON'] : []),
  ];
  const rows = items.map((tc) => {
    const all = TENANT_ROLES.flatMap((r) => tc.status?.hosts?.[r] ?? []);
    return [
      tc.metadata.namespace ?? '-',
      tc.metadata.name ?? '',
      condition(tc, 'Ready')?.status ?? '-',
      condition(tc, 'Scheduled')?.status ?? '-',
      condition(tc, 'ServicesReady')?.status ?? '-',
      `${tc.status?.claimedHosts ?? 0}/${tc.status?.desiredHosts ?? '?'}`,
      ...(wide
        ? [String(all.filter((h) => h.health === 'Failed').length), condition(tc, 'Ready')?.reason ?? '-']
        : []),
    ];
  });
  return columns([head, ...rows]);
}

/** The detail `tenant status` prints. */
export function tenantDetail(tc: TenantCluster): string {
  const lines = [`TenantCluster ${tc.metadata.namespace}/${tc.metadata.name}`, ''];
  const rows: string[][] = [['ROLE', 'HOST', 'RACK', 'DOMAIN', 'IP', 'STATE', 'HEALTH']];
  for (const role of TENANT_ROLES) {
    const want = tc.spec.nodes[role];
    for (const h of tc.status?.hosts?.[role] ?? []) {
      rows.push([
        role,
        `${h.namespace}/${h.name}`,
        h.rack ?? '-',
        h.domain ?? '-',
        h.ip ?? '-',
        h.standby ? 'standby' : 'active',
        h.health === 'Failed' ? `Failed: ${h.healthReason ?? ''}` : h.health,
      ]);
    }
    if (want) {
      const held = tc.status?.hosts?.[role]?.length ?? 0;
      lines.push(
        `${role}: ${want.count.active} active + ${want.count.standby ?? 0} standby wanted, ${held} held${want.topologyKey ? `, one per ${want.topologyKey} (${want.topologyScope ?? 'Role'})` : ''}`,
      );
    }
  }
  lines.push('', columns(rows).trimEnd(), '', 'Services:');
  const s = tc.spec.services ?? {};
  if (s.controlPlaneLoadBalancer)
    lines.push(
      `  control-plane load balancer  nodePort ${s.controlPlaneLoadBalancer.nodePort} (interface ${s.controlPlaneLoadBalancer.nodeInterfaceId})`,
    );
  if (s.workerLoadBalancer)
    lines.push(
      `  worker load balancer         nodePorts ${s.workerLoadBalancer.nodePortRange.start}-${s.workerLoadBalancer.nodePortRange.end} (interface ${s.workerLoadBalancer.nodeInterfaceId})`,
    );
  if (s.jumpHost)
    lines.push(
      `  jump host                    nodePort ${s.jumpHost.nodePort} (interface ${s.jumpHost.nodeInterfaceId})`,
    );
  if (!s.controlPlaneLoadBalancer && !s.workerLoadBalancer && !s.jumpHost) lines.push('  none');
  lines.push('', 'Conditions:');
  for (const c of tc.status?.conditions ?? [])
    lines.push(`  ${c.type}=${c.status} ${c.reason}: ${c.message}`);
  if (!tc.status?.conditions?.length)
    lines.push('  none yet (is the operator running the tenantcluster controller?)');
  return `${lines.join('\n')}\n`;
}

const view: ObjectView<TenantCluster> = {
  table: (items, wide) => tenantTable(items, wide),
  name: (tc) => kubeName(T, tc),
  none: 'No TenantClusters.',
};

async function listVerb(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const namespace = inv.string('namespace');
  const client = connect();
  const items = (await needsCrd(T, client.list<TenantCluster>(T, namespace ? { namespace } : {}))).items;
  items.sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  writeObjects(io, outputFormat(inv), items, view);
  return 0;
}

async function statusVerb(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const client = connect();
  const tc = await needsCrd(
    T,
    client.get<TenantCluster>(T, inv.args[0]!, inv.string('namespace') ?? 'default'),
  );
  writeObjects(io, outputFormat(inv), [tc], {
    ...view,
    table: (items) => items.map(tenantDetail).join('\n'),
  });
  return 0;
}

async function convertVerb(inv: Invocation, { io }: VerbContext): Promise<number> {
  const file = inv.string('filename');
  if (!file) throw new UsageError('convert needs -f FILE (the SIPCluster; - for stdin)');
  const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new Error(`${file}: not YAML or JSON: ${(err as Error).message}`);
  }
  // The converter checks its result against the TypeBox schema: loaded for this verb only.
  const { ConversionError, convertSipCluster } = await import('./convert.ts');
  let result: Conversion;
  try {
    result = convertSipCluster(doc);
  } catch (err) {
    if (err instanceof ConversionError) throw new Error(`${file}: ${err.message}`);
    throw err;
  }
  io.out.write(stringify(result.cluster));
  for (const n of result.notes) io.err.write(`not carried over: ${n}\n`);
  for (const h of result.hints) io.err.write(`note: ${h}\n`);
  for (const e of result.invalid) io.err.write(`invalid: ${e}\n`);
  return result.invalid.length ? 1 : 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
