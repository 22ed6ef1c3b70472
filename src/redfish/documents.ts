// The Redfish documents a BMC serves, built from a machine's record: the
// service root, collections, ComputerSystem with its processors and Ethernet
// interfaces, Manager with its virtual CD, Chassis, sessions, and the error
// body. Pure: no I/O, so each shape is checked by a unit test and by real
// clients (redfishtool, sushy) in the integration test.
import { createHash } from 'node:crypto';
import { BOOT_ENABLED, BOOT_MODES, BOOT_TARGETS, RESET_TYPES, type RedfishSystem } from './backend.ts';
import type { Session } from './sessions.ts';

export const ROOT = '/redfish/v1';

export const paths = {
  root: `${ROOT}/`,
  systems: `${ROOT}/Systems`,
  system: (id: string) => `${ROOT}/Systems/${id}`,
  reset: (id: string) => `${ROOT}/Systems/${id}/Actions/ComputerSystem.Reset`,
  nics: (id: string) => `${ROOT}/Systems/${id}/EthernetInterfaces`,
  nic: (id: string, nic: string) => `${ROOT}/Systems/${id}/EthernetInterfaces/${nic}`,
  processors: (id: string) => `${ROOT}/Systems/${id}/Processors`,
  processor: (id: string, p: string) => `${ROOT}/Systems/${id}/Processors/${p}`,
  managers: `${ROOT}/Managers`,
  manager: (id: string) => `${ROOT}/Managers/${id}`,
  media: (id: string) => `${ROOT}/Managers/${id}/VirtualMedia`,
  cd: (id: string) => `${ROOT}/Managers/${id}/VirtualMedia/Cd`,
  systemMedia: (id: string) => `${ROOT}/Systems/${id}/VirtualMedia`,
  storage: (id: string) => `${ROOT}/Systems/${id}/Storage`,
  storageController: (id: string) => `${ROOT}/Systems/${id}/Storage/1`,
  drive: (id: string) => `${ROOT}/Systems/${id}/Storage/1/Drives/Disk0`,
  chassisList: `${ROOT}/Chassis`,
  chassis: (id: string) => `${ROOT}/Chassis/${id}`,
  sessionService: `${ROOT}/SessionService`,
  sessions: `${ROOT}/SessionService/Sessions`,
  session: (id: string) => `${ROOT}/SessionService/Sessions/${id}`,
} as const;

type Doc = Record<string, unknown>;

const link = (path: string) => ({ '@odata.id': path });
const OK = { State: 'Enabled', Health: 'OK' };

/** A stable UUID for a name (a machine's SMBIOS UUID never changes). */
export function stableUuid(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Who a service says it is in its root document. */
export interface ServiceIdentity {
  /** Names the service (its root's UUID). */
  id: string;
  name: string;
  product: string;
}

export function serviceRoot(who: ServiceIdentity): Doc {
  return {
    '@odata.type': '#ServiceRoot.v1_5_0.ServiceRoot',
    '@odata.id': paths.root,
    Id: 'RootService',
    Name: who.name,
    RedfishVersion: '1.6.0',
    UUID: stableUuid(who.id),
    Product: who.product,
    Vendor: 'nodewarden',
    Systems: link(paths.systems),
    Managers: link(paths.managers),
    Chassis: link(paths.chassisList),
    SessionService: link(paths.sessionService),
    Links: { Sessions: link(paths.sessions) },
  };
}

export function collection(type: string, path: string, name: string, members: string[]): Doc {
  return {
    '@odata.type': `#${type}.${type}`,
    '@odata.id': path,
    Name: name,
    'Members@odata.count': members.length,
    Members: members.map(link),
  };
}

/** The System's UUID: a sushy-style BMC serves the System at it too. */
export const systemUuid = (id: string): string => stableUuid(`system/${id}`);

/** Where a machine's virtual media lives: under its Manager, or under its System (newer BMCs). */
export type MediaHome = 'manager' | 'system';

export function system(m: RedfishSystem, media: MediaHome = 'manager'): Doc {
  const { id } = m.spec;
  return {
    '@odata.type': '#ComputerSystem.v1_13_0.ComputerSystem',
    '@odata.id': paths.system(id),
    Id: id,
    Name: id,
    SystemType: m.spec.kind === 'vm' ? 'Virtual' : 'Physical',
    Manufacturer: 'nodewarden',
    Model: m.model ?? (m.spec.kind === 'vm' ? 'Simulated VM' : 'Simulated server'),
    SerialNumber: stableUuid(`serial/${id}`).replaceAll('-', '').slice(0, 12).toUpperCase(),
    UUID: systemUuid(id),
    HostName: id,
    PowerState: m.power,
    Status: OK,
    Boot: {
      BootSourceOverrideTarget: m.boot.target,
      'BootSourceOverrideTarget@Redfish.AllowableValues': [...BOOT_TARGETS],
      BootSourceOverrideEnabled: m.boot.enabled,
      'BootSourceOverrideEnabled@Redfish.AllowableValues': [...BOOT_ENABLED],
      BootSourceOverrideMode: m.boot.mode,
      'BootSourceOverrideMode@Redfish.AllowableValues': [...BOOT_MODES],
    },
    ProcessorSummary: { Count: m.spec.cpus, Model: cpuModel(m), Status: OK },
    MemorySummary: { TotalSystemMemoryGiB: m.spec.memoryMiB / 1024, Status: OK },
    Processors: link(paths.processors(id)),
    EthernetInterfaces: link(paths.nics(id)),
    Storage: link(paths.storage(id)),
    ...(media === 'system' ? { VirtualMedia: link(paths.systemMedia(id)) } : {}),
    Links: { ManagedBy: [link(paths.manager(id))], Chassis: [link(paths.chassis(id))] },
    Actions: {
      '#ComputerSystem.Reset': {
        target: paths.reset(id),
        'ResetType@Redfish.AllowableValues': [...RESET_TYPES],
      },
    },
  };
}

function cpuModel(m: RedfishSystem): string {
  return m.spec.kind === 'vm' ? 'QEMU Virtual CPU' : 'Simulated x86-64 CPU';
}

/** Sockets: two from 16 logical CPUs up, each with half of them; two threads per core when even. */
function sockets(m: RedfishSystem): { id: string; threads: number; cores: number }[] {
  const n = m.spec.cpus >= 16 && m.spec.cpus % 2 === 0 ? 2 : 1;
  const threads = m.spec.cpus / n;
  const cores = threads % 2 === 0 ? threads / 2 : threads;
  return Array.from({ length: n }, (_, i) => ({ id: `CPU${i + 1}`, threads, cores }));
}

export function processors(m: RedfishSystem): Doc {
  const ids = sockets(m).map((s) => paths.processor(m.spec.id, s.id));
  return collection('ProcessorCollection', paths.processors(m.spec.id), 'Processors', ids);
}

export function processor(m: RedfishSystem, socketId: string): Doc | undefined {
  const s = sockets(m).find((x) => x.id === socketId);
  if (!s) return undefined;
  return {
    '@odata.type': '#Processor.v1_7_0.Processor',
    '@odata.id': paths.processor(m.spec.id, s.id),
    Id: s.id,
    Name: s.id,
    Socket: s.id,
    ProcessorType: 'CPU',
    ProcessorArchitecture: 'x86',
    InstructionSet: 'x86-64',
    Manufacturer: 'nodewarden',
    Model: cpuModel(m),
    MaxSpeedMHz: 3000,
    TotalCores: s.cores,
    TotalThreads: s.threads,
    Status: OK,
  };
}

export function ethernetInterfaces(m: RedfishSystem): Doc {
  const ids = m.spec.nics.map((n) => paths.nic(m.spec.id, n.name));
  return collection('EthernetInterfaceCollection', paths.nics(m.spec.id), 'Ethernet Interfaces', ids);
}

export function ethernetInterface(m: RedfishSystem, name: string): Doc | undefined {
  const nic = m.spec.nics.find((n) => n.name === name);
  if (!nic) return undefined;
  const v6 = nic.ip?.includes(':') ?? false;
  const addresses = nic.ip ? [{ Address: nic.ip, AddressOrigin: v6 ? 'SLAAC' : 'Static' }] : [];
  return {
    '@odata.type': '#EthernetInterface.v1_6_0.EthernetInterface',
    '@odata.id': paths.nic(m.spec.id, nic.name),
    Id: nic.name,
    Name: nic.name,
    MACAddress: nic.mac,
    PermanentMACAddress: nic.mac,
    SpeedMbps: 10_000,
    LinkStatus: 'LinkUp',
    Status: OK,
    IPv4Addresses: v6 ? [] : addresses,
    IPv6Addresses: v6 ? addresses : [],
  };
}

/** The System's one storage controller and its one disk, of spec.diskGB. */
export function storageCollection(m: RedfishSystem): Doc {
  return collection('StorageCollection', paths.storage(m.spec.id), 'Storage', [
    paths.storageController(m.spec.id),
  ]);
}

export function storage(m: RedfishSystem): Doc {
  const { id } = m.spec;
  return {
    '@odata.type': '#Storage.v1_8_0.Storage',
    '@odata.id': paths.storageController(id),
    Id: '1',
    Name: 'Storage controller',
    Drives: [link(paths.drive(id))],
    Status: OK,
  };
}

export function drive(m: RedfishSystem): Doc {
  const { id } = m.spec;
  return {
    '@odata.type': '#Drive.v1_9_0.Drive',
    '@odata.id': paths.drive(id),
    Id: 'Disk0',
    Name: 'Disk0',
    CapacityBytes: m.spec.diskGB * 1_000_000_000,
    MediaType: 'SSD',
    Protocol: m.spec.kind === 'vm' ? 'SATA' : 'NVMe',
    Manufacturer: 'nodewarden',
    Model: m.spec.kind === 'vm' ? 'QEMU HARDDISK' : 'Simulated NVMe SSD',
    SerialNumber: stableUuid(`disk/${id}`).replaceAll('-', '').slice(0, 16).toUpperCase(),
    Status: OK,
  };
}

export function manager(m: RedfishSystem, media: MediaHome = 'manager'): Doc {
  const { id } = m.spec;
  return {
    '@odata.type': '#Manager.v1_10_0.Manager',
    '@odata.id': paths.manager(id),
    Id: id,
    Name: `BMC of ${id}`,
    ManagerType: 'BMC',
    FirmwareVersion: '1.0.0',
    UUID: stableUuid(`manager/${id}`),
    Status: OK,
    ...(media === 'manager' ? { VirtualMedia: link(paths.media(id)) } : {}),
    Links: { ManagerForServers: [link(paths.system(id))], ManagerForChassis: [link(paths.chassis(id))] },
  };
}

const mediaPath = (m: RedfishSystem, home: MediaHome) =>
  home === 'system' ? paths.systemMedia(m.spec.id) : paths.media(m.spec.id);

export function virtualMediaCollection(m: RedfishSystem, home: MediaHome = 'manager'): Doc {
  const at = mediaPath(m, home);
  return collection('VirtualMediaCollection', at, 'Virtual Media', [`${at}/Cd`]);
}

export function virtualCd(m: RedfishSystem, home: MediaHome = 'manager'): Doc {
  const cd = `${mediaPath(m, home)}/Cd`;
  const image = m.virtualMedia ?? null;
  return {
    '@odata.type': '#VirtualMedia.v1_3_0.VirtualMedia',
    '@odata.id': cd,
    Id: 'Cd',
    Name: 'Virtual CD',
    MediaTypes: ['CD', 'DVD'],
    Image: image,
    ImageName: image ? (image.split('/').pop() ?? image) : null,
    Inserted: image !== null,
    WriteProtected: true,
    ConnectedVia: image ? 'URI' : 'NotConnected',
    Actions: {
      '#VirtualMedia.InsertMedia': { target: `${cd}/Actions/VirtualMedia.InsertMedia` },
      '#VirtualMedia.EjectMedia': { target: `${cd}/Actions/VirtualMedia.EjectMedia` },
    },
  };
}

export function chassis(m: RedfishSystem): Doc {
  const { id } = m.spec;
  return {
    '@odata.type': '#Chassis.v1_10_0.Chassis',
    '@odata.id': paths.chassis(id),
    Id: id,
    Name: id,
    ChassisType: m.spec.kind === 'vm' ? 'Component' : 'RackMount',
    PowerState: m.power,
    Status: OK,
    Links: { ComputerSystems: [link(paths.system(id))], ManagedBy: [link(paths.manager(id))] },
  };
}

export function sessionService(): Doc {
  return {
    '@odata.type': '#SessionService.v1_1_6.SessionService',
    '@odata.id': paths.sessionService,
    Id: 'SessionService',
    Name: 'Session Service',
    ServiceEnabled: true,
    SessionTimeout: 1800,
    Status: OK,
    Sessions: link(paths.sessions),
  };
}

export function session(s: Session): Doc {
  return {
    '@odata.type': '#Session.v1_1_0.Session',
    '@odata.id': paths.session(s.id),
    Id: s.id,
    Name: 'User Session',
    UserName: s.credentials.username,
  };
}

/** A Redfish error body; `messageId` is a Base registry message, e.g. "ResourceNotFound". */
export function redfishError(messageId: string, message: string, resolution = 'None.'): Doc {
  return {
    error: {
      code: 'Base.1.8.GeneralError',
      message,
      '@Message.ExtendedInfo': [
        {
          '@odata.type': '#Message.v1_1_1.Message',
          MessageId: `Base.1.8.${messageId}`,
          Message: message,
          Severity: 'Critical',
          Resolution: resolution,
        },
      ],
    },
  };
}
