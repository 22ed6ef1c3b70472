// `nodewarden bmc status|machines|power|faults`: look at and steer the
// simulated BMC fleet of a local cluster (what the bare-metal host controller
// talks Redfish to); the add-on declares it as its console. `serve` runs the
// fleet's own process in the foreground (`cluster up` starts entry.ts instead).
import { type CommandIO, STDIO, UsageError } from '../../../cli/command.ts';
import { faultsVerb, printDocument, serveVerb, simulatorConsoleFlags } from '../../../cli/local-target.ts';
import { columns } from '../../../cli/progress.ts';
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
import { type ConsoleTarget, consoleRequest } from './api.ts';
import { describeBmcFaults } from './faults.ts';
import { runningBmcEndpoint, serveBmcFleet } from './process-main.ts';
import { BMC_SIMULATOR, type BmcFaults, consolePaths, type Machine } from './protocol.ts';
import { readCertificate } from './tls.ts';

const FAULT_EXAMPLES = `e.g. --set '{"unreachable": ["bm-r0-01"]}', '{"badCredentials": ["*"]}', '{"powerOnDelayMs": 3000}'
keys: unreachable, badCredentials, failPower, vanished (machine ids, "*" for all), powerOnDelayMs;
behaviours of other BMCs, by machine id too: redirectToUuid, mediaUnderSystem, refuseBusyInsert`;

export const BMC: CommandTable = {
  name: 'bmc',
  flags: {
    ...simulatorConsoleFlags('fleet'),
    ...OUTPUT_FLAGS,
    kind: { type: 'string', value: 'KIND', help: 'only machines of this kind: physical or vm' },
    set: { type: 'string', value: 'JSON', help: `merge these faults\n${FAULT_EXAMPLES}` },
    clear: { type: 'boolean', help: 'remove every fault' },
    dir: { type: 'string', value: 'DIR', help: 'the add-on folder to serve from' },
  },
  common: ['cluster', 'name', 'endpoint', 'kubeconfig', 'context'],
  verbs: {
    status: {
      summary: "the fleet's endpoint, how many machines of each kind and power state, the faults",
      flags: ['output', 'json'],
      overrides: { output: DOCUMENT_OUTPUT },
      run: async (inv, { io }) => {
        const target = fleet(inv);
        const [machines, faults] = await Promise.all([
          consoleRequest<Machine[]>(target, 'GET', consolePaths.machines),
          consoleRequest<BmcFaults>(target, 'GET', consolePaths.faults),
        ]);
        const count = (kind: string) => machines.filter((m) => m.kind === kind).length;
        const on = machines.filter((m) => m.power === 'On').length;
        printDocument(io, inv, { endpoint: target.endpoint, machines: machines.length, faults }, () =>
          columns([
            ['endpoint', target.endpoint],
            ['machines', `${count('physical')} physical, ${count('vm')} VMs; ${on} on`],
            ['faults', describeBmcFaults(faults)],
          ]),
        );
        return 0;
      },
    },
    machines: {
      synopsis: '[ID...]',
      summary: 'the machines (all, or those named), with power, hardware and BMC address',
      args: { name: 'machine id', min: 0, max: 1000 },
      flags: ['kind', 'output', 'json'],
      run: async (inv, { io }) => {
        const kind = inv.string('kind');
        if (kind !== undefined && kind !== 'physical' && kind !== 'vm') {
          throw new UsageError(`--kind is physical or vm, not ${kind}`);
        }
        const target = fleet(inv);
        const shown = inv.args.length
          ? await Promise.all(
              inv.args.map((id) => consoleRequest<Machine>(target, 'GET', consolePaths.machine(id))),
            )
          : await consoleRequest<Machine[]>(
              target,
              'GET',
              `${consolePaths.machines}${kind ? `?kind=${kind}` : ''}`,
            );
        writeObjects(io, outputFormat(inv), shown, {
          table: (items, wide) => machineTable(items, wide),
          name: (m) => m.id,
          document: (items) => items,
          none: 'No machines.',
        });
        return 0;
      },
    },
    power: {
      synopsis: 'ID on|off',
      summary: "switch a machine at its BMC, behind the operator's back (as someone at the rack would)",
      args: { name: 'machine id and on|off', min: 2, max: 2 },
      flags: ['output', 'json'],
      overrides: { output: DOCUMENT_OUTPUT },
      run: async (inv, { io }) => {
        const [id = '', state = ''] = inv.args;
        const power = { on: 'On', off: 'Off' }[state.toLowerCase()];
        if (!power) throw new UsageError(`power takes on or off, not ${state}`);
        const m = await consoleRequest<Machine>(fleet(inv), 'POST', consolePaths.power(id), { power });
        printDocument(io, inv, m, () => `${m.id}: ${m.power}\n`);
        return 0;
      },
    },
    faults: faultsVerb<BmcFaults>({
      read: (inv) => consoleRequest(fleet(inv), 'GET', consolePaths.faults),
      set: (inv, patch) => consoleRequest(fleet(inv), 'PUT', consolePaths.faults, patch),
      clear: (inv) => consoleRequest(fleet(inv), 'DELETE', consolePaths.faults),
      describe: describeBmcFaults,
      example: '{"unreachable": ["bm-r0-01"]}',
      setMeans: 'replaces the keys given',
    }),
    serve: serveVerb('fleet', serveBmcFleet),
  },
};

export function bmcCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(BMC, args, io);
}

function machineTable(machines: readonly Machine[], wide = false): string {
  const rows = machines.map((m) => [
    m.id,
    m.kind,
    m.rack ?? m.hypervisor ?? '',
    m.power,
    String(m.cpus),
    `${Math.round(m.memoryMiB / 1024)}Gi`,
    String(m.nics.length),
    m.nics[0]?.mac ?? '',
    m.nics[0]?.ip ?? '',
    m.virtualMedia ?? '',
    ...(wide ? [`${m.diskGB}G`, m.bootOverride ?? '', m.bmcAddress] : []),
  ]);
  const head = [
    'MACHINE',
    'KIND',
    'RACK/HYPERVISOR',
    'POWER',
    'CPUS',
    'MEMORY',
    'NICS',
    'BOOT MAC',
    'IP',
    'MEDIA',
  ];
  return columns([[...head, ...(wide ? ['DISK', 'BOOT ONCE', 'BMC ADDRESS'] : [])], ...rows]);
}

/**
 * Where the fleet answers: --endpoint; else the fleet of the cluster --cluster (or
 * $NODEWARDEN_CLUSTER) names; else of the local cluster the kubeconfig's
 * current context points at, with the fleet's certificate to trust.
 */
function fleet(inv: Invocation): ConsoleTarget {
  const endpoint = inv.string('endpoint');
  if (endpoint) return { endpoint };
  const found = runningSimulator(inv, {
    name: BMC_SIMULATOR,
    title: 'simulated BMC fleet',
    running: runningBmcEndpoint,
  });
  const ca = readCertificate(found.dir)?.cert;
  return ca ? { endpoint: found.endpoint, ca } : { endpoint: found.endpoint };
}
