// One node's VMs as libvirt domains: define (networks, volumes, domain),
// remove (domain, volumes, networks no VM uses any more) and list, plus the
// power, boot and media changes the Redfish backend asks for. Every domain is
// rendered by domain-xml.ts from the record its metadata carries, so a change
// of boot override or media is: read the record, change it, define again.
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type BootSettings, RedfishBackendError } from '../../../../redfish/backend.ts';
import type { VmDefinition } from '../hypervisor.ts';
import { CD_TARGET, domainXml, recordOf, sameDefinition, type VmRecord } from './domain-xml.ts';
import type { Virsh } from './virsh.ts';

export interface LibvirtVmHostOptions {
  virsh: Virsh;
  virtType: 'kvm' | 'qemu';
  /** The agent's folder: its storage pool (volumes/) and the serial logs (consoles/). */
  dir: string;
  /** The libvirt storage pool's name. Default nodewarden. */
  storagePool?: string;
}

/** A libvirt domain we hold, with its power as libvirt says. */
export interface HeldDomain {
  record: VmRecord;
  running: boolean;
}

const NO_BOOT: BootSettings = { target: 'None', enabled: 'Disabled', mode: 'Legacy' };
const DEFAULT_NETWORK = 'default';

/** A pool network's libvirt network, and its bridge (at most 15 characters, as Linux wants). */
export const libvirtNetwork = (network: string) => `nw-${network}`;
export const bridgeOf = (network: string) =>
  `nwbr-${createHash('sha256').update(network).digest('hex').slice(0, 8)}`;
export const volumeName = (id: string, disk: number) => `${id}-disk${disk}.qcow2`;
export const cdVolumeName = (id: string) => `${id}-cd.iso`;

export class LibvirtVmHost {
  readonly virsh: Virsh;
  readonly virtType: 'kvm' | 'qemu';
  readonly storagePool: string;
  private readonly dir: string;
  /**
   * Each domain's record as we last wrote or read it (null: a domain not ours).
   * Records change only through this class, so reads of power need one virsh
   * call, not a dumpxml per domain: a Systems list is one call whatever the count.
   */
  private readonly records = new Map<string, VmRecord | null>();
  /**
   * Writes begun per domain: a read that a write overtook is not cached (a
   * Systems GET during a define would keep the record of before it, and the
   * next start would render the domain from that: a CD inserted, then lost).
   */
  private readonly writes = new Map<string, number>();
  /** Each domain's last change under way: changes of one domain run one at a time. */
  private readonly changing = new Map<string, Promise<unknown>>();

  constructor(opts: LibvirtVmHostOptions) {
    this.virsh = opts.virsh;
    this.virtType = opts.virtType;
    this.dir = opts.dir;
    this.storagePool = opts.storagePool ?? 'nodewarden';
  }

  /** The storage pool and the consoles' folder. */
  async init(): Promise<void> {
    mkdirSync(join(this.dir, 'consoles'), { recursive: true });
    await this.virsh.ensureDirPool(this.storagePool, join(this.dir, 'volumes'));
  }

  consoleLog(id: string): string {
    return join(this.dir, 'consoles', `${id}.log`);
  }

  /** Defines the VM switched off, or finds it defined the same way; another definition is a 409. */
  define(vm: VmDefinition): Promise<HeldDomain> {
    return this.oneAtATime(vm.id, () => this.defineNow(vm));
  }

  private async defineNow(vm: VmDefinition): Promise<HeldDomain> {
    const have = await this.get(vm.id);
    if (have) {
      if (sameDefinition(have.record.definition, vm)) return have;
      throw new RedfishBackendError(409, `VM "${vm.id}" exists with another definition; remove it first`);
    }
    for (const nic of vm.nics) {
      const net = nic.network ?? DEFAULT_NETWORK;
      await this.virsh.ensureNetwork(libvirtNetwork(net), bridgeOf(net));
    }
    for (const [i, d] of vm.disks.entries())
      await this.virsh.ensureVolume(this.storagePool, volumeName(vm.id, i), d.sizeGB);
    const record: VmRecord = { definition: vm, boot: NO_BOOT };
    await this.write(record);
    return { record, running: false };
  }

  /** Renders and defines the domain from its record (a running domain takes it at its next start). */
  private async write(record: VmRecord, cdFile?: string): Promise<void> {
    const vm = record.definition;
    this.writes.set(vm.id, (this.writes.get(vm.id) ?? 0) + 1);
    this.records.delete(vm.id);
    const nets = new Map(vm.nics.map((n) => [n.name, libvirtNetwork(n.network ?? DEFAULT_NETWORK)]));
    await this.virsh.defineDomain(
      domainXml({
        record,
        virtType: this.virtType,
        storagePool: this.storagePool,
        volumes: vm.disks.map((_, i) => volumeName(vm.id, i)),
        networkOf: (nic) => nets.get(nic)!,
        ...(cdFile ? { cdFile } : {}),
        consoleLog: this.consoleLog(vm.id),
      }),
    );
    this.records.set(vm.id, record);
  }

  /** Stops and undefines the domain, deletes its volumes and log, and the networks no VM uses any more. */
  remove(id: string): Promise<void> {
    return this.oneAtATime(id, () => this.removeNow(id));
  }

  private async removeNow(id: string): Promise<void> {
    const have = await this.get(id);
    await this.virsh.undefine(id);
    this.records.delete(id);
    const mine = (await this.virsh.volumes(this.storagePool)).filter((v) => v.startsWith(`${id}-`));
    for (const v of mine) await this.virsh.deleteVolume(this.storagePool, v);
    rmSync(this.consoleLog(id), { force: true });
    if (have) await this.dropUnusedNetworks();
  }

  private async dropUnusedNetworks(): Promise<void> {
    const used = new Set<string>();
    for (const d of await this.list())
      for (const n of d.record.definition.nics) used.add(libvirtNetwork(n.network ?? DEFAULT_NETWORK));
    for (const net of await this.virsh.networks())
      if (net.startsWith('nw-') && !used.has(net)) {
        await this.virsh.run(['net-destroy', net]).catch(() => undefined);
        await this.virsh.run(['net-undefine', net]);
      }
  }

  /** The VM, if a domain of ours has this name. */
  async get(id: string): Promise<HeldDomain | undefined> {
    const state = await this.virsh.domainState(id);
    if (state === undefined) {
      this.records.delete(id);
      return undefined;
    }
    const record = await this.recordOf(id);
    return record ? { record, running: state === 'running' } : undefined;
  }

  /** Every domain of ours. */
  async list(): Promise<HeldDomain[]> {
    const out: HeldDomain[] = [];
    for (const [name, state] of await this.virsh.domainStates()) {
      const record = await this.recordOf(name).catch(() => undefined);
      if (record) out.push({ record, running: state === 'running' });
    }
    return out;
  }

  /** The record the domain carries, read once and then kept until we write it again. */
  private async recordOf(name: string): Promise<VmRecord | undefined> {
    const cached = this.records.get(name);
    if (cached !== undefined) return cached ?? undefined;
    const writes = this.writes.get(name);
    const xml = await this.virsh.domainXml(name);
    if (xml === undefined) return undefined;
    const record = recordOf(xml) ?? null;
    if (this.writes.get(name) === writes) this.records.set(name, record);
    return record ?? undefined;
  }

  /** Starts the domain with its boot override, which a "Once" override then forgets. */
  powerOn(id: string): Promise<void> {
    return this.oneAtATime(id, () => this.start(id));
  }

  private async start(id: string): Promise<void> {
    const d = await this.must(id);
    if (d.running) return;
    const cd = await this.cdFile(d.record);
    await this.write(d.record, cd);
    await this.virsh.start(id);
    // A "Once" override is used by this start: defined again without it, which
    // the running domain does not see (it keeps the boot order it started with).
    if (d.record.boot.enabled === 'Once')
      await this.write({ ...d.record, boot: { ...d.record.boot, target: 'None', enabled: 'Disabled' } }, cd);
  }

  /** Restarts a running domain (libvirt's reset keeps its devices); one switched off is started. */
  restart(id: string): Promise<void> {
    return this.oneAtATime(id, async () => {
      const d = await this.must(id);
      if (!d.running) return this.start(id);
      // The boot order is read at start: a pending override needs a stop and a start.
      if (d.record.boot.enabled !== 'Disabled' && d.record.boot.target !== 'None') {
        await this.virsh.destroy(id);
        return this.start(id);
      }
      await this.virsh.reset(id);
    });
  }

  powerOff(id: string, graceful: boolean): Promise<void> {
    return this.oneAtATime(id, async () => {
      const d = await this.must(id);
      if (!d.running) return;
      await (graceful ? this.virsh.shutdown(id) : this.virsh.destroy(id));
    });
  }

  setBoot(id: string, boot: BootSettings): Promise<VmRecord> {
    return this.oneAtATime(id, async () => {
      const d = await this.must(id);
      const record = { ...d.record, boot };
      await this.write(record, await this.cdFile(record));
      return record;
    });
  }

  /** Puts the ISO at `file` (`bytes` long) in the VM's CD drive, uploaded into the storage pool; `image` is the URL it came from. */
  insertMedia(id: string, image: string, file: string, bytes: number): Promise<void> {
    return this.oneAtATime(id, async () => {
      await this.must(id);
      const path = await this.virsh.uploadVolume(this.storagePool, cdVolumeName(id), file, bytes);
      // Power read after the upload, which can take long: the running domain gets it live.
      const d = await this.must(id);
      await this.write({ ...d.record, media: image }, path);
      if (d.running) await this.virsh.changeMedia(id, CD_TARGET, path);
    });
  }

  /** Empties the CD drive; an empty one is no error (Ironic ejects every drive before inserting). */
  ejectMedia(id: string): Promise<void> {
    return this.oneAtATime(id, async () => {
      const d = await this.must(id);
      if (!d.record.media) return;
      const { media: _, ...record } = d.record;
      if (d.running) await this.virsh.changeMedia(id, CD_TARGET, undefined).catch(() => undefined);
      await this.write(record);
      await this.virsh.deleteVolume(this.storagePool, cdVolumeName(id));
    });
  }

  /**
   * Runs `change` once the domain's earlier changes ended, as a BMC takes one
   * action at a time: a client that gave up on a slow insert and asked again
   * must not interleave the two (power read before an upload, acted on after).
   */
  private oneAtATime<T>(id: string, change: () => Promise<T>): Promise<T> {
    const before = this.changing.get(id) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(change);
    const tail = mine.catch(() => undefined);
    this.changing.set(id, tail);
    void tail.then(() => {
      if (this.changing.get(id) === tail) this.changing.delete(id);
    });
    return mine;
  }

  /** The CD volume's path while the record says an image is inserted. */
  private async cdFile(record: VmRecord): Promise<string | undefined> {
    if (!record.media) return undefined;
    return this.virsh.volumePath(this.storagePool, cdVolumeName(record.definition.id));
  }

  private async must(id: string): Promise<HeldDomain> {
    const d = await this.get(id);
    if (!d) throw new RedfishBackendError(404, `no VM "${id}"`);
    return d;
  }
}
