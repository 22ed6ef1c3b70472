// The pod's network handed to its VM, inside the pod's own network namespace
// (the anchor's containervmm design): the pod's address, route and MAC are
// read off eth0; eth0 gets a new MAC and, with a tap for QEMU, joins a bridge
// that holds no pod address; the guest gets the pod's MAC, and its address by
// DHCP (dhcp-server.ts). The bridge's own link-local address is only the DHCP
// server's identity.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { GUEST_INTERFACE } from '../../api/vm-image.ts';
import type { Lease } from './dhcp.ts';

export const POD_INTERFACE = 'eth0';
export const BRIDGE = 'br-vm';
export const TAP = 'tap-vm';
/** The DHCP server's address, on the bridge only. */
export const DHCP_SERVER_ID = '169.254.77.1';

interface IpAddr {
  ifname: string;
  address: string;
  mtu: number;
  addr_info: { family: string; local: string; prefixlen: number }[];
}

const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8' });

/** The pod's address, route and MAC as eth0 has them now. */
export function readPodNetwork(hostname: string): Lease {
  const [link] = JSON.parse(ip('-j', 'addr', 'show', 'dev', POD_INTERFACE)) as IpAddr[];
  const v4 = link?.addr_info.find((a) => a.family === 'inet');
  if (!link || !v4) throw new Error(`${POD_INTERFACE} has no IPv4 address to hand to the VM`);
  const routes = JSON.parse(ip('-j', 'route', 'show', 'default')) as { gateway?: string }[];
  return {
    mac: link.address.toLowerCase(),
    ip: v4.local,
    prefix: v4.prefixlen,
    ...(routes[0]?.gateway ? { router: routes[0].gateway } : {}),
    dns: nameservers(),
    mtu: link.mtu,
    hostname,
  };
}

function nameservers(): string[] {
  try {
    return readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .map((l) => /^nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(l)?.[1])
      .filter((a): a is string => a !== undefined);
  } catch {
    return [];
  }
}

/** A locally administered unicast MAC for eth0, which gives its own to the guest. */
function freshMac(): string {
  const b = randomBytes(6);
  b[0] = ((b[0] ?? 0) & 0xfe) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/** Moves the pod's address to the guest's side: bridge, tap, eth0 re-addressed. */
export function bridgePodToVm(lease: Lease): void {
  const mtu = String(lease.mtu);
  ip('addr', 'flush', 'dev', POD_INTERFACE);
  ip('link', 'set', POD_INTERFACE, 'down');
  ip('link', 'set', POD_INTERFACE, 'address', freshMac());
  ip('link', 'add', BRIDGE, 'mtu', mtu, 'type', 'bridge', 'forward_delay', '0');
  ip('tuntap', 'add', 'dev', TAP, 'mode', 'tap');
  ip('link', 'set', TAP, 'mtu', mtu, 'master', BRIDGE, 'up');
  ip('link', 'set', POD_INTERFACE, 'master', BRIDGE, 'up');
  // The node's bridge (CNI's, in hairpin mode) sends the guest's broadcasts back in through eth0:
  // learning there, this bridge would take the guest's MAC for one on the node's side and send the
  // guest's own traffic back out (a worker never reached its master). The guest is only on the tap.
  ip('link', 'set', POD_INTERFACE, 'type', 'bridge_slave', 'learning', 'off');
  ip('link', 'set', BRIDGE, 'up');
  ip('addr', 'add', `${DHCP_SERVER_ID}/32`, 'dev', BRIDGE);
  // The DHCP replies' way out: limited broadcast has no route of its own.
  ip('route', 'add', '255.255.255.255/32', 'dev', BRIDGE);
}

export { GUEST_INTERFACE };
