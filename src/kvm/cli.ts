// `nodewarden kvm`: the KVMClusters as a table (list), and one cluster in
// detail — its nodes with role, versions, readiness and drain progress, its
// release history and conditions (status). A cluster's id is unique across
// namespaces, so `status ID` finds it wherever it lives.
import { KVMClusterKind } from '../api/kinds.ts';
import type { KVMCluster } from '../api/kvm.ts';
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

const T = KVMClusterKind;

export const KVM: CommandTable = {
  name: 'kvm',
  common: ['kubeconfig', 'context', 'namespace'],
  flags: {
    ...CONNECTION_FLAGS,
    namespace: {
      type: 'string',
      short: 'n',
      value: 'NS',
      help: 'the KVMClusters of this namespace (default: all)',
    },
    ...OUTPUT_FLAGS,
  },
  verbs: {
    list: {
      summary: 'the KVMClusters: release, created, updating, Ready nodes of desired',
      flags: ['output', 'json'],
      run: (inv, ctx) => listVerb(inv, ctx),
    },
    status: {
      synopsis: 'ID',
      summary:
        'one KVMCluster: its nodes (role, versions, readiness, drain progress), releases and conditions',
      args: { name: 'ID', min: 1, max: 1 },
      flags: ['output', 'json'],
      run: (inv, ctx) => statusVerb(inv, ctx),
    },
  },
  footer: 'Exit status: 0 done; 1 failed; 2 usage error.',
};

export async function kvmCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(KVM, args, io);
}

const condition = (kc: KVMCluster, type: string) => kc.status?.conditions?.find((c) => c.type === type);

export function kvmTable(items: readonly KVMCluster[], wide: boolean): string {
  const head = [
    'NAMESPACE',
    'ID',
    'RELEASE',
    'CREATED',
    'UPDATING',
    'NODES',
    ...(wide ? ['VNI', 'MASTERS', 'WORKERS'] : []),
  ];
  const rows = items.map((kc) => [
    kc.metadata.namespace ?? '-',
    kc.metadata.name ?? '',
    kc.spec.release.version,
    condition(kc, 'Created')?.status ?? '-',
    condition(kc, 'Updating')?.status ?? '-',
    `${kc.status?.readyNodes ?? 0}/${kc.status?.desiredNodes ?? kc.spec.masters.length + (kc.spec.workers?.length ?? 0)}`,
    ...(wide
      ? [String(kc.spec.network.vni), String(kc.spec.masters.length), String(kc.spec.workers?.length ?? 0)]
      : []),
  ]);
  return columns([head, ...rows]);
}

/** The detail `kvm status` prints. */
export function kvmDetail(kc: KVMCluster): string {
  const r = kc.spec.release;
  const lines = [
    `KVMCluster ${kc.metadata.namespace}/${kc.metadata.name}`,
    `release ${r.version} (Kubernetes ${r.kubernetesVersion}, OS ${r.osVersion}), VNI ${kc.spec.network.vni}`,
    `kubeconfig: secret ${kc.status?.kubeconfigSecret ?? '(not yet written)'}`,
    '',
  ];
  const rows: string[][] = [['ROLE', 'ID', 'NODE', 'READY', 'KUBELET', 'RELEASE', 'DRAIN']];
  for (const n of kc.status?.nodes ?? []) {
    const d = n.drain;
    const drain = d
      ? `${d.phase}${d.podsLeft !== undefined ? ` (${d.podsLeft} pods left)` : ''} since ${d.startedAt}`
      : '-';
    rows.push([n.role, n.id, n.name, n.ready ? 'yes' : 'no', n.version ?? '-', n.release ?? '-', drain]);
  }
  if (rows.length === 1) lines.push('no VMs yet');
  else lines.push(columns(rows).trimEnd());
  lines.push('', 'Releases:');
  for (const v of kc.status?.versions ?? []) lines.push(`  ${v.release} reached ${v.lastTransitionTime}`);
  if (!kc.status?.versions?.length) lines.push('  none reached yet');
  lines.push('', 'Conditions:');
  for (const c of kc.status?.conditions ?? [])
    lines.push(`  ${c.type}=${c.status} ${c.reason}: ${c.message}`);
  if (!kc.status?.conditions?.length)
    lines.push('  none yet (is the operator running the kvmcluster controller?)');
  return `${lines.join('\n')}\n`;
}

const view: ObjectView<KVMCluster> = {
  table: (items, wide) => kvmTable(items, wide),
  name: (kc) => kubeName(T, kc),
  none: 'No KVMClusters.',
};

async function listVerb(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const namespace = inv.string('namespace');
  const items = (await needsCrd(T, connect().list<KVMCluster>(T, namespace ? { namespace } : {}))).items;
  items.sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
  writeObjects(io, outputFormat(inv), items, view);
  return 0;
}

async function statusVerb(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const id = inv.args[0] ?? '';
  const namespace = inv.string('namespace');
  const items = (await needsCrd(T, connect().list<KVMCluster>(T, namespace ? { namespace } : {}))).items;
  const kc = items.find((c) => c.metadata.name === id);
  if (!kc) throw new UsageError(`no KVMCluster "${id}"${namespace ? ` in namespace ${namespace}` : ''}`);
  writeObjects(io, outputFormat(inv), [kc], { ...view, table: (list) => list.map(kvmDetail).join('\n') });
  return 0;
}
