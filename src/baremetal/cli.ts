// `nodewarden baremetal`: the fleet's hosts as a table (kubectl get bmh, with
// the hardware and the claim spelled out), and power on, off or cycle by
// name. Power goes through the BareMetalHost, as in metal3 (spec.online, the
// reboot.metal3.io annotation): the host controller does the BMC call, so the
// command needs no BMC credentials and the object says what was asked.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BareMetalHost } from '../api/baremetal.ts';
import { BareMetalHostKind, RACK_LABEL, REBOOT_ANNOTATION } from '../api/kinds.ts';
import { type CommandIO, needsCrd, STDIO, UsageError } from '../cli/command.ts';
import { columns, createScreen } from '../cli/progress.ts';
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
import type { KubeClient } from '../runtime/client.ts';

const T = BareMetalHostKind;
/** Labels a tenant cluster puts on the hosts it claims (ours, and the anchor's with --sip-compatible-labels). */
const CLAIM_LABELS = ['baremetal.nodewarden.dev/cluster-name', 'sip.airshipit.org/cluster-name'];
const WATCH_POLL_MS = 1_000;

export const BAREMETAL: CommandTable = {
  name: 'baremetal',
  common: ['kubeconfig', 'context', 'namespace'],
  flags: {
    ...CONNECTION_FLAGS,
    namespace: {
      type: 'string',
      short: 'n',
      value: 'NS',
      help: 'only hosts in this namespace (default: all)',
    },
    ...OUTPUT_FLAGS,
    watch: { type: 'boolean', short: 'w', help: 'redraw whenever a host changes (Ctrl-C to stop)' },
  },
  verbs: {
    hosts: {
      summary: 'the BareMetalHosts: rack, state, power, hardware, and which cluster claimed them',
      flags: ['output', 'json', 'watch'],
      run: (inv, ctx) => hosts(inv, ctx),
    },
    power: {
      synopsis: 'on|off|cycle HOST',
      summary: 'power a host on or off (spec.online), or cycle it once (the reboot.metal3.io annotation)',
      args: { name: 'on|off|cycle HOST', min: 2, max: 2 },
      flags: [],
      run: (inv, ctx) => power(inv, ctx),
    },
  },
  footer: 'Exit status: 0 done; 1 failed or refused by the API server; 2 usage error.',
};

export async function baremetalCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(BAREMETAL, args, io);
}

/** `nodewarden vm-host`: the VM host agent's command, kept beside its libvirt hypervisor. */
export async function vmHostCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return (await import('./virtualhosts/hypervisors/libvirt/agent-cli.ts')).vmHostCommand(args, io);
}

async function list(client: KubeClient, namespace: string | undefined): Promise<BareMetalHost[]> {
  const items = (await needsCrd(T, client.list<BareMetalHost>(T, namespace ? { namespace } : {}))).items;
  return items.sort((a, b) =>
    `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  );
}

/** One line of hardware: "16 CPU, 64 GiB, 2 NICs". */
export function hardwareText(h: BareMetalHost): string {
  const hw = h.status?.hardware;
  if (!hw) return '-';
  const parts: string[] = [];
  if (hw.cpu?.count !== undefined) parts.push(`${hw.cpu.count} CPU`);
  if (hw.ramMebibytes !== undefined) parts.push(`${Math.round(hw.ramMebibytes / 1024)} GiB`);
  if (hw.nics) parts.push(`${hw.nics.length} NIC${hw.nics.length === 1 ? '' : 's'}`);
  return parts.join(', ') || '-';
}

/** on, off, or the way it is going ("off → on") while it differs from spec.online. */
export function powerText(h: BareMetalHost): string {
  const now = h.status?.poweredOn === undefined ? '?' : h.status.poweredOn ? 'on' : 'off';
  const want = h.spec.online ? 'on' : 'off';
  return now === want ? now : `${now} → ${want}`;
}

function claimedBy(h: BareMetalHost): string {
  const labels = h.metadata.labels ?? {};
  const label = CLAIM_LABELS.map((k) => labels[k]).find(Boolean);
  const consumer = (h.spec.consumerRef as { name?: string } | undefined)?.name;
  return label ?? consumer ?? '-';
}

/**
 * The hosts, a row each. `wide` (-o wide) gives the namespace a column of its
 * own and adds where the BMC answers, the boot MAC, metal3's operational
 * status and the image provisioned.
 */
export function hostsTable(items: readonly BareMetalHost[], allNamespaces: boolean, wide = false): string {
  const rows = items.map((h) => [
    ...(wide ? [h.metadata.namespace ?? '-'] : []),
    allNamespaces && !wide ? `${h.metadata.namespace}/${h.metadata.name}` : (h.metadata.name ?? ''),
    h.metadata.labels?.[RACK_LABEL] ?? '-',
    h.status?.provisioning?.state || 'new',
    powerText(h),
    hardwareText(h),
    claimedBy(h),
    ...(wide
      ? [
          h.spec.bmc?.address ?? '-',
          h.spec.bootMACAddress ?? '-',
          h.status?.operationalStatus ?? '-',
          h.status?.provisioning?.image?.url ?? '-',
        ]
      : []),
    h.status?.errorType ? `${h.status.errorType}: ${h.status.errorMessage ?? ''}` : '',
  ]);
  const head = ['HOST', 'RACK', 'STATE', 'POWER', 'HARDWARE', 'CLAIMED BY'];
  if (wide) head.unshift('NAMESPACE');
  if (wide) head.push('BMC', 'BOOT MAC', 'OPERATIONAL', 'IMAGE');
  return columns([[...head, 'ERROR'], ...rows]);
}

async function hosts(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const output = outputFormat(inv);
  const namespace = inv.string('namespace');
  const client = connect();
  const view: ObjectView<BareMetalHost> = {
    table: (shown, wide) => hostsTable(shown, !namespace, wide),
    name: (h) => kubeName(T, h),
    none: 'No BareMetalHosts.',
  };
  const table = output === 'table' || output === 'wide';
  // What a watch compares to know whether anything shown changed.
  const render = (items: BareMetalHost[]) =>
    table
      ? items.length
        ? view.table(items, output === 'wide')
        : `${view.none}\n`
      : JSON.stringify(output === 'name' ? items.map(view.name) : items);
  let items = await list(client, namespace);
  if (!inv.flag('watch')) {
    writeObjects(io, output, items, view);
    return 0;
  }
  // Hosts change when their BMC is read (every resync): polling the list is as
  // fresh as a watch, and prints only when what is shown changes.
  const screen = createScreen(io.out);
  let shown: string | undefined;
  for (;;) {
    const text = render(items);
    if (text !== shown) {
      shown = text;
      if (table) screen.show(text);
      else writeObjects(io, output, items, view, true);
    }
    await sleep(WATCH_POLL_MS);
    items = await list(client, namespace);
  }
}

async function power(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const [action, name] = inv.args as [string, string];
  if (!['on', 'off', 'cycle'].includes(action)) {
    throw new UsageError(`power takes on, off or cycle, not "${action}"`);
  }
  const client = connect();
  const matches = (await list(client, inv.string('namespace'))).filter((h) => h.metadata.name === name);
  if (matches.length === 0) throw new Error(`no BareMetalHost named "${name}" (nodewarden baremetal hosts)`);
  if (matches.length > 1) {
    const where = matches.map((h) => h.metadata.namespace).join(', ');
    throw new UsageError(`BareMetalHost "${name}" is in several namespaces (${where}): pick one with -n`);
  }
  const host = matches[0]!;
  const ns = host.metadata.namespace;
  const ref = `baremetalhost/${name}`;
  if (action === 'cycle') {
    if (!host.spec.online) throw new Error(`${ref} is offline (spec.online false): power it on instead`);
    const patch = { metadata: { annotations: { [REBOOT_ANNOTATION]: '' } } };
    await client.patch(T, name, ns, patch, { type: 'merge' });
    io.out.write(`${ref} will be power-cycled once by the host controller\n`);
    return 0;
  }
  const online = action === 'on';
  if (host.spec.online === online) {
    io.out.write(`${ref} is already ${action} (spec.online ${online})\n`);
    return 0;
  }
  await client.patch(T, name, ns, { spec: { online } }, { type: 'merge' });
  io.out.write(`${ref} powering ${action} (spec.online ${online})\n`);
  return 0;
}
