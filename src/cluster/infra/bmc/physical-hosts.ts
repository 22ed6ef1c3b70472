// The physical machines `cluster up --bare-metal-hosts 24:racks=4` racks: the
// flag parsed, then each machine planned from the cluster's name and its own
// id alone, so the same cluster always gets the same hardware, MACs,
// addresses and passwords, and adding hosts later never changes the ones there.
import { seededRandom, seedFromName } from '../kit/random.ts';
import type { MachineSpec } from './protocol.ts';

export interface PhysicalHostsRequest {
  count: number;
  racks: number;
}

/** The most hosts one flag may ask for (the benchmark's 500, with room). */
export const MAX_PHYSICAL_HOSTS = 2000;
/** Each rack has a block of 1024 addresses in the /16 (its first 10 kept for the rack's gateway and switches). */
const MAX_RACKS = 64;
const HOSTS_PER_RACK = 1014;

/** "24" or "24:racks=4"; Error saying what to write otherwise. */
export function parsePhysicalHosts(text: string): PhysicalHostsRequest {
  const [head, ...options] = text.trim().split(':');
  const count = wholeNumber(head ?? '', 'the host count');
  if (count < 1 || count > MAX_PHYSICAL_HOSTS) {
    throw new Error(`--bare-metal-hosts: the host count must be 1..${MAX_PHYSICAL_HOSTS}, not ${head}`);
  }
  let racks = 1;
  for (const option of options) {
    const [key, value] = option.split('=');
    if (key !== 'racks' || value === undefined) {
      throw new Error(
        `--bare-metal-hosts: unknown option "${option}" (write COUNT or COUNT:racks=N, e.g. 24:racks=4)`,
      );
    }
    racks = wholeNumber(value, 'racks');
  }
  if (racks < 1 || racks > Math.min(count, MAX_RACKS)) {
    throw new Error(
      `--bare-metal-hosts: racks must be 1..${Math.min(count, MAX_RACKS)} (at most the host count)`,
    );
  }
  if (Math.ceil(count / racks) > HOSTS_PER_RACK) {
    throw new Error(`--bare-metal-hosts: at most ${HOSTS_PER_RACK} hosts per rack; give more racks`);
  }
  return { count, racks };
}

function wholeNumber(text: string, what: string): number {
  if (!/^[0-9]+$/.test(text))
    throw new Error(`--bare-metal-hosts: ${what} must be a whole number, not "${text}"`);
  return Number(text);
}

/** The rack a host stands in, as its label value and MachineSpec.rack say it. */
export function rackName(rack: number): string {
  return `rack-${rack}`;
}

/** The network the hosts' first NICs are on: a benchmarking range (RFC 2544), never routed anywhere. */
export const OAM_NETWORK = { prefix: '198.18', netmask: '255.255.0.0', gateway: '198.18.0.1' } as const;

const CPUS = [8, 16, 24, 32, 48, 64];
const MEMORY_GIB = [32, 64, 96, 128, 256, 384, 512];
const DISK_GB = [480, 960, 1920, 3840];

/**
 * The hosts for a request: racks filled in turn, the first racks taking one
 * more when the count does not divide; ids bm-r<rack>-<NN> (two digits at
 * least, whatever the count, so an id never changes when hosts are added).
 */
export function planPhysicalHosts(cluster: string, req: PhysicalHostsRequest): MachineSpec[] {
  const hosts: MachineSpec[] = [];
  const perRack = Math.floor(req.count / req.racks);
  for (let rack = 0; rack < req.racks; rack++) {
    const inRack = perRack + (rack < req.count % req.racks ? 1 : 0);
    for (let i = 0; i < inRack; i++) {
      hosts.push(planHost(cluster, `bm-r${rack}-${String(i).padStart(2, '0')}`, rack, i));
    }
  }
  return hosts;
}

function planHost(cluster: string, id: string, rack: number, slot: number): MachineSpec {
  const random = seededRandom(seedFromName(`${cluster}/bmc/${id}`));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const nicCount = 1 + Math.floor(random() * 4);
  const mac = () =>
    // 02: a locally administered unicast address, never a vendor's.
    [
      '02',
      ...Array.from({ length: 5 }, () =>
        Math.floor(random() * 256)
          .toString(16)
          .padStart(2, '0'),
      ),
    ].join(':');
  // By rack and slot, not by count: asking for more hosts later never moves an address.
  const host = rack * 1024 + 10 + slot;
  const ip = `${OAM_NETWORK.prefix}.${Math.floor(host / 256)}.${host % 256}`;
  return {
    id,
    kind: 'physical',
    rack: rackName(rack),
    cpus: pick(CPUS),
    memoryMiB: pick(MEMORY_GIB) * 1024,
    diskGB: pick(DISK_GB),
    nics: Array.from({ length: nicCount }, (_, i) => ({
      name: `eno${i + 1}`,
      mac: mac(),
      ...(i === 0 ? { ip } : {}),
    })),
    credentials: {
      username: pick(['admin', 'root', 'ADMIN']),
      password: Array.from({ length: 16 }, () => Math.floor(random() * 36).toString(36)).join(''),
    },
  };
}
