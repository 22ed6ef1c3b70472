// Real VM hosts for a local cluster: `cluster up --vm-hosts NODE,…` starts,
// for each node named, `nodewarden vm-host agent --private-libvirtd`
// (detached; the CLI exits): a libvirtd of the node's own in a network
// namespace the agent makes (nw-vmh-<id>), so the VMs' bridges and NICs never
// leave it, and the agent on loopback publishing itself under the node's name
// — where VirtualHostPools on those nodes define real libvirt domains. `down`
// and `delete` stop them, and each takes its VMs with it (domains, volumes,
// namespace, state folder); whatever a killed agent left behind is swept. The
// bare-metal capability lists this value; it speaks to the agent only through
// its command line.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLUSTER_GATEWAY } from '../../real-nodes/layout.ts';
import type { InfraContext, SimulatedInfrastructure } from '../index.ts';
import { type AddonProcess, nodeScript, runningPid, startDetached, stopProcess } from '../kit/process.ts';

export const VM_HOSTS_FLAG = 'vm-hosts';
const NODES_FILE = 'nodes.json';
/** The agent says this line once it serves (the KVM probe may take 20 s first). */
const SERVING = 'VM host agent at ';
const START_TIMEOUT_MS = 180_000;
/** The agent stops its guests, libvirtd and the namespace on SIGTERM: give it time. */
const STOP_GRACE_MS = 60_000;

/** A short id for the node's VM host, unique per cluster folder and node (it names a namespace and a folder). */
export const vmHostId = (clusterDir: string, node: string) =>
  createHash('sha256').update(`${clusterDir}/${node}`).digest('hex').slice(0, 8);

/**
 * One node's agent: its process (pid and log in the add-on's folder), its
 * namespace, and its state — libvirtd's sockets, the volumes — in a short
 * path of its own, as a unix socket's path must fit in 108 bytes.
 */
export function agentOf(ctx: Pick<InfraContext, 'dir'>, node: string) {
  const dir = join(ctx.dir, node);
  const id = vmHostId(ctx.dir, node);
  const state = join(tmpdir(), `nw-vmh-${id}`);
  const proc: AddonProcess = {
    pidFile: join(dir, 'agent.pid'),
    logFile: join(dir, 'agent.log'),
    marker: state,
  };
  return { dir, id, netns: `nw-vmh-${id}`, state, proc };
}

/** "a,b" → ["a", "b"]; names are node names (DNS labels). */
export function parseVmHosts(flag: string): string[] {
  const nodes = flag
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const bad = nodes.find((n) => !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n));
  if (bad !== undefined) throw new Error(`--${VM_HOSTS_FLAG}: "${bad}" is not a node name`);
  return [...new Set(nodes)];
}

function savedNodes(dir: string): string[] {
  const f = join(dir, NODES_FILE);
  return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as string[]) : [];
}

export const vmHostsAddon: SimulatedInfrastructure = {
  name: 'vm-hosts',
  upFlags: {
    [VM_HOSTS_FLAG]: {
      placeholder: 'NODE,…',
      help: [
        "run a VM host agent with a libvirtd of its own for these nodes (root): VirtualHostPools' VMs",
        'there are real libvirt domains (QEMU), their networks in namespaces the cluster makes',
      ],
    },
  },

  async up(ctx: InfraContext): Promise<void> {
    const flag = ctx.flags?.[VM_HOSTS_FLAG];
    const nodes = flag === undefined ? savedNodes(ctx.dir) : parseVmHosts(flag);
    if (nodes.length === 0) return;
    mkdirSync(ctx.dir, { recursive: true });
    writeFileSync(join(ctx.dir, NODES_FILE), `${JSON.stringify(nodes)}\n`);
    for (const node of nodes) {
      const a = agentOf(ctx, node);
      if (runningPid(a.proc) !== undefined) continue;
      await sweep(a);
      mkdirSync(a.dir, { recursive: true });
      rmSync(a.proc.logFile, { force: true });
      const cli = nodeScript(import.meta.url, '../../../cmd/main');
      // A test runner's marker in the environment would make the child report to it.
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      startDetached(
        a.proc,
        cli.command,
        [
          ...cli.args,
          ...['vm-host', 'agent', '--private-libvirtd', a.id, '--dir', a.state],
          // A free port on loopback each: several VM hosts share this machine's loopback. Pods
          // on real nodes reach it at the cluster's gateway (the relay), so its certificate names that too.
          ...['--listen', '127.0.0.1:0', '--also-reachable-at', CLUSTER_GATEWAY],
          ...['--node', node, '--publish', '--kubeconfig', ctx.kubeconfig],
        ],
        { env },
      );
      const said = await waitForServing(a.proc);
      ctx.progress?.(`VM host ${node}: ${said}`);
    }
  },

  async down(ctx: InfraContext): Promise<void> {
    if (!existsSync(ctx.dir)) return;
    const nodes = readdirSync(ctx.dir, { withFileTypes: true }).filter((d) => d.isDirectory());
    for (const d of nodes) {
      const a = agentOf(ctx, d.name);
      await stopProcess(a.proc, STOP_GRACE_MS).catch(() => undefined);
      await sweep(a);
    }
  },

  /** Each running agent's port: pods on real nodes reach its Redfish there (the jump host's `host`). */
  async loopbackPorts(ctx: InfraContext): Promise<number[]> {
    return savedNodes(ctx.dir).flatMap((n) => {
      const a = agentOf(ctx, n);
      if (runningPid(a.proc) === undefined || !existsSync(a.proc.logFile)) return [];
      const port = servingPort(readFileSync(a.proc.logFile, 'utf8'));
      return port === undefined ? [] : [port];
    });
  },

  async summary(ctx: InfraContext): Promise<string | undefined> {
    const running = savedNodes(ctx.dir).filter((n) => runningPid(agentOf(ctx, n).proc) !== undefined);
    return running.length > 0 ? `libvirt VM hosts: ${running.join(', ')}` : undefined;
  },
};

/** The loopback port of the agent whose log this is, from the line it says once it serves. */
export function servingPort(log: string): number | undefined {
  const line = log.split('\n').find((l) => l.includes(SERVING));
  const port = Number(/https:\/\/127\.0\.0\.1:(\d+)/.exec(line ?? '')?.[1]);
  return port > 0 ? port : undefined;
}

async function waitForServing(p: AddonProcess): Promise<string> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const log = existsSync(p.logFile) ? readFileSync(p.logFile, 'utf8') : '';
    const line = log.split('\n').find((l) => l.includes(SERVING));
    if (line) return line.trim();
    if (runningPid(p) === undefined || Date.now() > deadline) {
      await stopProcess(p).catch(() => undefined);
      const tail = log.trim().split('\n').slice(-5).join('\n');
      throw new Error(`the VM host agent did not start (${p.logFile}):\n${tail}`);
    }
    await sleep(250);
  }
}

/**
 * What an agent that did not stop cleanly leaves: guests (QEMU outlives
 * libvirtd), the daemons, the namespace, the folder. Processes are found by
 * the folder on their command line, never by name.
 */
async function sweep(a: ReturnType<typeof agentOf>): Promise<void> {
  for (const pid of processesNaming(a.state)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  if (existsSync(`/run/netns/${a.netns}`))
    await new Promise((resolve) => execFile('ip', ['netns', 'delete', a.netns], resolve));
  rmSync(a.state, { recursive: true, force: true });
}

function processesNaming(dir: string): number[] {
  if (!existsSync('/proc')) return [];
  const out: number[] = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmdline = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (Number(p) !== process.pid && cmdline.includes(`${dir}/`)) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
