// A VM as a libvirt domain, rendered from what was decided (pure): vCPUs and
// memory from the flavor; its disks as volumes of the agent's storage pool;
// one virtio NIC per network with the MAC the IPPool gave, on that network's
// bridge; an IDE CD drive for virtual media (machine type `pc`, which has IDE);
// the serial console written to a log file; `type` kvm or qemu as detected
// (accel.ts). What the agent must remember of the VM (its definition, boot
// override, inserted image) rides in the domain's <metadata>, so the agent
// keeps no state of its own and a restarted one finds everything again (the
// BMC password too: the domain's config is root's alone, as a BMC's users are).
// Its UUID is its Redfish System's, as a server's SMBIOS UUID is its BMC's.
import type { BootSettings } from '../../../../redfish/backend.ts';
import { systemUuid } from '../../../../redfish/documents.ts';
import type { VmDefinition } from '../hypervisor.ts';

export const METADATA_NS = 'https://nodewarden.dev/vm-host/v1';
/** The CD drive's target: the secondary IDE master, as a PC has it. */
export const CD_TARGET = 'hdc';

/** What the agent remembers of a VM, in its domain's metadata. */
export interface VmRecord {
  definition: VmDefinition;
  boot: BootSettings;
  /** The image URL in the virtual CD, if any. */
  media?: string;
}

export interface DomainInput {
  record: VmRecord;
  virtType: 'kvm' | 'qemu';
  /** The storage pool the disks' volumes are in, and their names, the root disk first. */
  storagePool: string;
  volumes: string[];
  /** The libvirt network each NIC is on, by NIC name. */
  networkOf: (nic: string) => string;
  /** The file in the CD drive (an uploaded volume's path), if any. */
  cdFile?: string;
  /** Where the serial console is written. */
  consoleLog: string;
}

const esc = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll("'", '&apos;');

/** Boot devices in order: a pending override first, then the disk, the CD and the network. */
export function bootOrder(boot: BootSettings): string[] {
  const dev = { Cd: 'cdrom', Pxe: 'network', Hdd: 'hd' } as Record<string, string>;
  const first = boot.enabled !== 'Disabled' ? dev[boot.target] : undefined;
  return [...new Set([...(first ? [first] : []), 'hd', 'cdrom'])];
}

export function domainXml(input: DomainInput): string {
  const { definition: vm } = input.record;
  const disks = input.volumes.map(
    (v, i) =>
      `    <disk type='volume' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source pool='${esc(input.storagePool)}' volume='${esc(v)}'/>
      <target dev='vd${String.fromCharCode(97 + i)}' bus='virtio'/>
    </disk>`,
  );
  const cd = `    <disk type='file' device='cdrom'>
      <driver name='qemu' type='raw'/>${input.cdFile ? `\n      <source file='${esc(input.cdFile)}'/>` : ''}
      <target dev='${CD_TARGET}' bus='ide'/>
      <readonly/>
    </disk>`;
  const nics = vm.nics.map(
    (n) => `    <interface type='network'>
      <mac address='${esc(n.mac)}'/>
      <source network='${esc(input.networkOf(n.name))}'/>
      <model type='virtio'/>
    </interface>`,
  );
  return `<domain type='${input.virtType}'>
  <name>${esc(vm.id)}</name>
  <uuid>${systemUuid(vm.id)}</uuid>
  <metadata>
    <nw:vm xmlns:nw='${METADATA_NS}'>${encodeRecord(input.record)}</nw:vm>
  </metadata>
  <memory unit='MiB'>${vm.flavor.memoryMiB}</memory>
  <vcpu>${vm.flavor.cpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
${bootOrder(input.record.boot)
  .map((d) => `    <boot dev='${d}'/>`)
  .join('\n')}
  </os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
${[...disks, cd, ...nics].join('\n')}
    <serial type='file'>
      <source path='${esc(input.consoleLog)}'/>
      <target port='0'/>
    </serial>
    <memballoon model='none'/>
  </devices>
</domain>
`;
}

/** The record as metadata text: base64 JSON, which no XML tool rewrites. */
export function encodeRecord(r: VmRecord): string {
  return Buffer.from(JSON.stringify(r)).toString('base64');
}

/** The record a domain's XML carries, or undefined for a domain that is not ours. */
export function recordOf(xml: string): VmRecord | undefined {
  const m = xml.match(
    /<(?:[\w-]+:)?vm\b[^>]*xmlns(?::[\w-]+)?=["']https:\/\/nodewarden\.dev\/vm-host\/v1["'][^>]*>([^<]*)</,
  );
  if (!m) return undefined;
  try {
    return JSON.parse(Buffer.from(m[1]!.trim(), 'base64').toString('utf8')) as VmRecord;
  } catch {
    return undefined;
  }
}

/** Whether two definitions describe the same VM (what makes a second define a no-op rather than a 409). */
export function sameDefinition(a: VmDefinition, b: VmDefinition): boolean {
  const nic = (n: VmDefinition['nics'][number]) => `${n.name}/${n.mac}/${n.ip ?? ''}/${n.network ?? ''}`;
  return (
    a.id === b.id &&
    a.flavor.cpus === b.flavor.cpus &&
    a.flavor.memoryMiB === b.flavor.memoryMiB &&
    a.disks.map((d) => d.sizeGB).join() === b.disks.map((d) => d.sizeGB).join() &&
    a.nics.map(nic).join() === b.nics.map(nic).join() &&
    a.credentials.username === b.credentials.username &&
    a.credentials.password === b.credentials.password
  );
}
