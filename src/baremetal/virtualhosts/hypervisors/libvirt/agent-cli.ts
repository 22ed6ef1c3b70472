// `nodewarden vm-host agent`: runs a node's VM host agent until stopped —
// against the node's libvirtd (--libvirt-uri), or a private one it starts in a
// network namespace of the host's own (--private-libvirtd NAME) — and, with
// --publish, publishes it for the pool controller under the node's name
// (kube-system/nodewarden-vm-host-agents), withdrawing it on the way out.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CommandIO, STDIO, UsageError } from '../../../../cli/command.ts';
import {
  CONNECTION_FLAGS,
  type CommandTable,
  dispatch,
  type Invocation,
  type VerbContext,
} from '../../../../cli/verbs.ts';
import { VmHostAgent } from './agent.ts';
import { publishAgent } from './hypervisors.ts';
import { PrivateLibvirtd } from './libvirtd.ts';

export const VM_HOST: CommandTable = {
  name: 'vm-host',
  common: ['kubeconfig', 'context'],
  flags: {
    ...CONNECTION_FLAGS,
    'libvirt-uri': { type: 'string', value: 'URI', help: "the node's libvirt, e.g. qemu:///system" },
    'private-libvirtd': {
      type: 'string',
      value: 'NAME',
      help: 'start a libvirtd of its own in network namespace nw-vmh-NAME instead (root)',
    },
    dir: {
      type: 'string',
      value: 'DIR',
      help: 'its storage pool, serial logs and CA (default /var/lib/nodewarden/vm-host)',
    },
    listen: {
      type: 'string',
      value: 'ADDR',
      help: "Redfish and the agent calls: loopback out of cluster, the node's address in its\nDaemonSet (default 127.0.0.1:8000)",
    },
    'also-reachable-at': {
      type: 'string',
      value: 'ADDR,…',
      help: "addresses clients also reach it at (a relay's, a NAT's): its certificate names them too",
    },
    node: { type: 'string', value: 'NODE', help: 'the node it is the agent of (with --publish)' },
    publish: { type: 'boolean', help: 'publish it for the pool controller under --node' },
  },
  verbs: {
    agent: {
      summary: "serve Redfish for the node's libvirt domains and define them for VirtualHostPools",
      flags: ['libvirt-uri', 'private-libvirtd', 'dir', 'listen', 'also-reachable-at', 'node', 'publish'],
      run: (inv, ctx) => agent(inv, ctx),
    },
  },
  footer: 'Runs until interrupted (SIGINT or SIGTERM). Exit status: 0 stopped; 1 failed; 2 usage error.',
};

export function vmHostCommand(args: string[], io: CommandIO = STDIO): Promise<number> {
  return dispatch(VM_HOST, args, io);
}

async function agent(inv: Invocation, { io, connect }: VerbContext): Promise<number> {
  const uri = inv.string('libvirt-uri');
  const privateName = inv.string('private-libvirtd');
  if (!uri === !privateName) throw new UsageError('give one of --libvirt-uri or --private-libvirtd');
  const node = inv.string('node');
  if (inv.flag('publish') && !node) throw new UsageError('--publish needs --node');
  const dir = inv.string('dir') ?? '/var/lib/nodewarden/vm-host';
  const libvirtd = privateName
    ? await PrivateLibvirtd.start({ name: privateName, dir: join(dir, 'libvirtd') })
    : undefined;
  const a = await VmHostAgent.start({
    libvirtUri: uri ?? libvirtd!.uri,
    dir: join(dir, 'agent'),
    listen: inv.string('listen') ?? '127.0.0.1:8000',
    alsoReachableAt: (inv.string('also-reachable-at') ?? '').split(',').filter(Boolean),
    onStandBy: (message) => io.err.write(`${message}\n`),
  }).catch(async (err: unknown) => {
    await libvirtd?.stop();
    throw err;
  });
  writeFileSync(join(dir, 'ca.crt'), a.caPem);
  io.out.write(
    `VM host agent at ${a.endpoint} (CA: ${join(dir, 'ca.crt')}); guests: ${a.accel.type} — ${a.accel.reason}\n`,
  );
  const client = inv.flag('publish') ? connect() : undefined;
  if (client && node) await publishAgent(client, node, a.published);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  if (client && node) await publishAgent(client, node, undefined).catch(() => undefined);
  await a.close();
  await libvirtd?.stop();
  return 0;
}
