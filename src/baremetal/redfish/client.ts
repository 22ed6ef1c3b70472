// A Redfish client for the few calls the host controller makes: read a System,
// its NICs, processors and disks, reset it, set a one-time boot source, insert
// and eject virtual media. Our own code over node:http(s) (transport.ts): the
// calls are a handful of JSON requests, and what matters is that every
// failure comes back as a BmcError whose kind the controller can switch on,
// with the BMC's own message kept. Virtual media is handled as Ironic does:
// drives are looked for under the System and the Manager, and every drive is
// ejected before an insert (iDRAC and iLO refuse an insert into a busy drive).
import type { RedfishAddress } from './address.ts';
import { BmcError, type Json, type RedfishCredentials, type Reply, requestJson } from './transport.ts';

export { BmcError, type BmcErrorKind, type RedfishCredentials } from './transport.ts';

export interface RedfishTarget {
  address: RedfishAddress;
  credentials: RedfishCredentials;
  /** metal3's disableCertificateVerification. */
  insecure: boolean;
}

export type ResetType = 'On' | 'ForceOff' | 'GracefulShutdown' | 'GracefulRestart' | 'ForceRestart';

export interface SystemInfo {
  id: string;
  powerState: string;
  cpuCount?: number;
  cpuModel?: string;
  memoryMiB?: number;
  manufacturer?: string;
  model?: string;
  serialNumber?: string;
  hostname?: string;
  managerPath?: string;
  nicsPath?: string;
  processorsPath?: string;
  storagePath?: string;
  /** Virtual media under the System itself (newer BMCs). */
  virtualMediaPath?: string;
  /** The one-time boot override the BMC holds, e.g. "Cd". */
  bootTarget?: string;
  bootEnabled?: string;
  /** Where the BMC redirected the System's address (e.g. to its UUID), if it did. */
  redirectedTo?: string;
}

export interface NicInfo {
  name: string;
  mac: string;
  ip?: string;
  speedGbps?: number;
}

type Str = string | undefined;
const str = (v: unknown): Str => (typeof v === 'string' && v ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const linkOf = (v: unknown): Str => str((v as Json | undefined)?.['@odata.id']);
const members = (coll: Json): string[] =>
  ((coll.Members as Json[] | undefined) ?? []).map((m) => String(m['@odata.id']));
/** Only the fields that are there, so a status holds no undefined. */
const some = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/** A virtual media drive as the BMC lists it. */
export interface MediaDrive {
  path: string;
  /** An image is in it (Inserted, or an Image named). */
  inserted: boolean;
  /** It takes a CD or DVD (or says not what it takes). */
  takesCd: boolean;
  /** The image's URL, when the BMC names it. */
  image?: string;
}

export interface ProcessorInfo {
  model?: string;
  arch?: string;
  threads?: number;
  maxSpeedMHz?: number;
}

/** A disk as metal3's hardwareDetails.storage lists it. */
export interface DiskInfo {
  name: string;
  sizeBytes?: number;
  model?: string;
  serialNumber?: string;
  vendor?: string;
  rotational?: boolean;
}

export function systemInfo(s: Json): SystemInfo {
  const proc = s.ProcessorSummary as Json | undefined;
  const gib = num((s.MemorySummary as Json | undefined)?.TotalSystemMemoryGiB);
  const boot = s.Boot as Json | undefined;
  return {
    id: str(s.Id) ?? '',
    powerState: str(s.PowerState) ?? 'Unknown',
    ...some({
      cpuCount: num(proc?.Count),
      cpuModel: str(proc?.Model),
      memoryMiB: gib !== undefined ? Math.round(gib * 1024) : undefined,
      manufacturer: str(s.Manufacturer),
      model: str(s.Model),
      serialNumber: str(s.SerialNumber),
      hostname: str(s.HostName),
      managerPath: linkOf(((s.Links as Json | undefined)?.ManagedBy as unknown[] | undefined)?.[0]),
      nicsPath: linkOf(s.EthernetInterfaces),
      processorsPath: linkOf(s.Processors),
      storagePath: linkOf(s.Storage),
      virtualMediaPath: linkOf(s.VirtualMedia),
      bootTarget: str(boot?.BootSourceOverrideTarget),
      bootEnabled: str(boot?.BootSourceOverrideEnabled),
    }),
  };
}

/** InsertMedia's wait for an answer: the BMC downloads the image first. */
const INSERT_MEDIA_TIMEOUT_MS = 120_000;

export class RedfishClient {
  private readonly target: RedfishTarget;

  constructor(target: RedfishTarget) {
    this.target = target;
  }

  private get where(): string {
    return `${this.target.address.origin}${this.target.address.systemPath}`;
  }

  private request(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<Reply> {
    const { address, credentials, insecure } = this.target;
    const t = { origin: address.origin, credentials, insecure, ...(timeoutMs ? { timeoutMs } : {}) };
    return requestJson(t, method, path, body);
  }

  private async get(path: string): Promise<Json> {
    return (await this.request('GET', path)).json;
  }

  async system(): Promise<SystemInfo> {
    const reply = await this.request('GET', this.target.address.systemPath);
    const info = systemInfo(reply.json);
    return reply.redirectedTo ? { ...info, redirectedTo: reply.redirectedTo } : info;
  }

  /** The System's NICs, in the order the BMC lists them. */
  async nics(system: SystemInfo): Promise<NicInfo[]> {
    if (!system.nicsPath) return [];
    const out: NicInfo[] = [];
    for (const path of members(await this.get(system.nicsPath))) {
      const n = await this.get(path);
      const v4 = str((n.IPv4Addresses as Json[] | undefined)?.[0]?.Address);
      const v6 = str((n.IPv6Addresses as Json[] | undefined)?.[0]?.Address);
      const mbps = num(n.SpeedMbps);
      out.push({
        name: String(n.Name ?? n.Id ?? ''),
        mac: String(n.MACAddress ?? '').toLowerCase(),
        ...some({ ip: v4 ?? v6, speedGbps: mbps !== undefined ? Math.round(mbps / 1000) : undefined }),
      });
    }
    return out;
  }

  /** The System's processors (sockets), in the order the BMC lists them. */
  async processors(system: SystemInfo): Promise<ProcessorInfo[]> {
    if (!system.processorsPath) return [];
    const out: ProcessorInfo[] = [];
    for (const path of members(await this.get(system.processorsPath))) {
      const p = await this.get(path);
      if (p.ProcessorType !== undefined && p.ProcessorType !== 'CPU') continue;
      out.push(
        some({
          model: str(p.Model),
          arch: archOf(str(p.InstructionSet) ?? str(p.ProcessorArchitecture)),
          threads: num(p.TotalThreads) ?? num(p.TotalCores),
          maxSpeedMHz: num(p.MaxSpeedMHz),
        }),
      );
    }
    return out;
  }

  /** Every drive of every storage controller of the System. */
  async disks(system: SystemInfo): Promise<DiskInfo[]> {
    if (!system.storagePath) return [];
    const out: DiskInfo[] = [];
    for (const path of members(await this.get(system.storagePath))) {
      const storage = await this.get(path);
      for (const drive of (storage.Drives as unknown[] | undefined) ?? []) {
        const at = linkOf(drive);
        if (at) out.push(diskInfo(await this.get(at)));
      }
    }
    return out;
  }

  async reset(type: ResetType): Promise<void> {
    await this.request('POST', `${this.target.address.systemPath}/Actions/ComputerSystem.Reset`, {
      ResetType: type,
    });
  }

  /** Boots once from `target` ("Cd", "Pxe", "Hdd") at the next power-on, and reads back that it took. */
  async bootOnce(target: string): Promise<void> {
    await this.request('PATCH', this.target.address.systemPath, {
      Boot: { BootSourceOverrideTarget: target, BootSourceOverrideEnabled: 'Once' },
    });
    const now = await this.system();
    if (now.bootTarget !== target || (now.bootEnabled !== undefined && now.bootEnabled === 'Disabled')) {
      throw new BmcError(
        'action-failed',
        `BMC at ${this.where} accepted a one-time boot from ${target} but reads ${now.bootTarget ?? 'no target'} (${now.bootEnabled ?? 'unknown'})`,
      );
    }
  }

  /** Every virtual media drive, under the System first and then its Manager, as Ironic looks. */
  async mediaDrives(system: SystemInfo): Promise<MediaDrive[]> {
    const collections: string[] = [];
    if (system.virtualMediaPath) collections.push(system.virtualMediaPath);
    if (system.managerPath) {
      const mine = linkOf((await this.get(system.managerPath)).VirtualMedia);
      if (mine) collections.push(mine);
    }
    if (collections.length === 0)
      throw new BmcError('protocol', `${this.where} has no VirtualMedia under its System or its Manager`);
    const drives: MediaDrive[] = [];
    for (const coll of collections) {
      for (const path of members(await this.get(coll))) {
        if (!drives.some((d) => d.path === path)) drives.push(driveOf(path, await this.get(path)));
      }
    }
    return drives;
  }

  /** Ejects every drive that holds an image, then inserts `image` into the first CD drive. */
  async insertMedia(system: SystemInfo, image: string): Promise<void> {
    const drives = await this.mediaDrives(system);
    const cd = drives.find((d) => d.takesCd);
    if (!cd) throw new BmcError('protocol', `${this.where} has no CD or DVD virtual media drive`);
    for (const d of drives) if (d.inserted) await this.eject(d.path);
    // A BMC fetches the image before it answers: give it longer than a plain call,
    // or a retry overlaps the insert still under way.
    await this.request(
      'POST',
      `${cd.path}/Actions/VirtualMedia.InsertMedia`,
      { Image: image, Inserted: true },
      INSERT_MEDIA_TIMEOUT_MS,
    );
  }

  /** The image in the first CD drive that holds one, if the BMC names it. */
  async insertedImage(system: SystemInfo): Promise<string | undefined> {
    return (await this.mediaDrives(system)).find((d) => d.takesCd && d.inserted)?.image;
  }

  /** Ejects every drive that holds an image. */
  async ejectMedia(system: SystemInfo): Promise<void> {
    for (const d of await this.mediaDrives(system)) if (d.inserted) await this.eject(d.path);
  }

  /** An eject the BMC refuses is fine if the drive is empty after all (some refuse ejecting nothing). */
  private async eject(path: string): Promise<void> {
    try {
      await this.request('POST', `${path}/Actions/VirtualMedia.EjectMedia`, {});
    } catch (err) {
      if (!(err instanceof BmcError) || err.kind !== 'action-failed') throw err;
      if (driveOf(path, await this.get(path)).inserted) throw err;
    }
  }
}

function driveOf(path: string, media: Json): MediaDrive {
  const types = (media.MediaTypes as unknown[] | undefined) ?? [];
  const image = str(media.Image);
  return {
    path,
    inserted: media.Inserted === true || image !== undefined,
    takesCd: types.length === 0 || types.some((t) => t === 'CD' || t === 'DVD'),
    ...(image ? { image } : {}),
  };
}

function diskInfo(d: Json): DiskInfo {
  const media = str(d.MediaType);
  return {
    name: str(d.Name) ?? str(d.Id) ?? '',
    ...some({
      sizeBytes: num(d.CapacityBytes),
      model: str(d.Model),
      serialNumber: str(d.SerialNumber),
      vendor: str(d.Manufacturer),
      rotational: media === undefined ? undefined : media === 'HDD',
    }),
  };
}

/** Redfish's instruction set in the form metal3 reports (uname -m). */
function archOf(set: Str): Str {
  if (!set) return undefined;
  return (
    (
      { 'x86-64': 'x86_64', x86: 'x86_64', 'ARM-A64': 'aarch64', PowerISA: 'ppc64le' } as Record<
        string,
        string
      >
    )[set] ?? set
  );
}
