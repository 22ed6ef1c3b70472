// Carrying out one step of a host's plan (planner.ts) at its BMC: each step
// a small function that acts over Redfish, records what it did in the status
// being built, and says so in an Event.
import {
  type BareMetalHost,
  type BareMetalHostStatusType,
  BareMetalHosts,
  REBOOT_ANNOTATION,
} from '../../api/baremetal.ts';
import type { KubeClient } from '../../runtime/client.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { Logger } from '../../runtime/log.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import type { DiskInfo, NicInfo, ProcessorInfo, RedfishClient, SystemInfo } from '../redfish/client.ts';
import { verifyImageChecksum } from './image-checksum.ts';
import { powerActions } from './metrics.ts';
import type { HostStep } from './planner.ts';

type HostObject = BareMetalHost & K8sObject;

/** What a step acts on: the host, its BMC as read this round, and the status being built. */
export interface StepContext {
  client: KubeClient;
  events: EventRecorder;
  log: Logger;
  host: HostObject;
  redfish: RedfishClient;
  system: SystemInfo;
  status: BareMetalHostStatusType;
}

type Step<K extends HostStep['kind']> = (
  c: StepContext,
  step: Extract<HostStep, { kind: K }>,
) => Promise<void>;

export function carryOut(c: StepContext, step: HostStep): Promise<void> {
  switch (step.kind) {
    case 'inspect':
      return inspect(c, step);
    case 'power':
      return power(c, step);
    case 'reboot':
      return reboot(c, step);
    case 'provision':
      return provision(c, step);
    case 'deprovision':
      return deprovision(c, step);
  }
}

const inspect: Step<'inspect'> = async ({ host, redfish, system, status, events }) => {
  const found: Inventory = {
    nics: await redfish.nics(system),
    processors: await redfish.processors(system),
    disks: await redfish.disks(system),
  };
  const hardware = hardwareOf(system, found);
  status.hardware = hardware;
  events.normal(
    host,
    'InspectionComplete',
    'Inspect',
    `${hardware?.cpu?.count ?? '?'} CPUs, ${system.memoryMiB ?? '?'} MiB, ${found.nics.length} NICs, ${found.disks.length} disks`,
  );
};

/** What inspection reads besides the System itself. */
export interface Inventory {
  nics: readonly NicInfo[];
  processors: readonly ProcessorInfo[];
  disks: readonly DiskInfo[];
}

/** status.hardware (metal3's hardwareDetails) from what the BMC reports, with only the fields it answered. */
export function hardwareOf(system: SystemInfo, found: Inventory): BareMetalHostStatusType['hardware'] {
  const cpu = cpuOf(system, found.processors);
  return {
    ...(cpu ? { cpu } : {}),
    ...(system.memoryMiB !== undefined ? { ramMebibytes: system.memoryMiB } : {}),
    nics: found.nics.map((n) => ({
      name: n.name,
      mac: n.mac,
      ...(n.ip ? { ip: n.ip } : {}),
      ...(n.speedGbps !== undefined ? { speedGbps: n.speedGbps } : {}),
    })),
    storage: found.disks.map((d) => ({ ...d })),
    ...(system.hostname ? { hostname: system.hostname } : {}),
    systemVendor: {
      ...(system.manufacturer ? { manufacturer: system.manufacturer } : {}),
      ...(system.model ? { productName: system.model } : {}),
      ...(system.serialNumber ? { serialNumber: system.serialNumber } : {}),
    },
  };
}

type Cpu = NonNullable<NonNullable<BareMetalHostStatusType['hardware']>['cpu']>;

/** metal3's cpu: the thread count (the System's summary, else the processors'), the first processor's model and arch. */
function cpuOf(system: SystemInfo, processors: readonly ProcessorInfo[]): Cpu | undefined {
  const threads = processors.reduce((n, p) => n + (p.threads ?? 0), 0);
  const count = system.cpuCount ?? (threads > 0 ? threads : undefined);
  const first = processors[0];
  const model = first?.model ?? system.cpuModel;
  if (count === undefined && !model) return undefined;
  return {
    ...(count !== undefined ? { count } : {}),
    ...(model ? { model } : {}),
    ...(first?.arch ? { arch: first.arch } : {}),
    ...(first?.maxSpeedMHz !== undefined ? { clockMegahertz: first.maxSpeedMHz } : {}),
  };
}

const power: Step<'power'> = async ({ host, redfish, status, events, log }, step) => {
  await redfish.reset(step.on ? 'On' : 'ForceOff');
  status.poweredOn = step.on;
  powerActions.inc({ action: step.on ? 'on' : 'off', cause: step.cause });
  const note =
    step.cause === 'drift'
      ? `powered ${step.on ? 'off' : 'on'} at the BMC behind our back; powering it ${step.on ? 'on' : 'off'} again as spec.online says`
      : `powering ${step.on ? 'on' : 'off'} as spec.online says`;
  if (step.cause === 'drift') events.warning(host, 'PowerDrift', 'Power', note);
  else events.normal(host, step.on ? 'PowerOn' : 'PowerOff', 'Power', note);
  log.info({ on: step.on, cause: step.cause }, 'power changed');
};

const reboot: Step<'reboot'> = async ({ client, host, redfish, events }) => {
  await redfish.reset('ForceRestart');
  powerActions.inc({ action: 'reboot', cause: 'spec' });
  await client.patch(
    BareMetalHosts.type,
    host.metadata.name!,
    host.metadata.namespace,
    { metadata: { annotations: { [REBOOT_ANNOTATION]: null } } },
    { type: 'merge' },
  );
  events.normal(host, 'Rebooted', 'Power', `restarted as the ${REBOOT_ANNOTATION} annotation asked`);
};

const provision: Step<'provision'> = async ({ host, redfish, system, status, events }, step) => {
  // Before the BMC is given it, as Ironic does: a ChecksumError is a provisioning error.
  const verified = await verifyImageChecksum({ ...host.spec.image, url: step.image });
  // Running with this image in its drive: an earlier pass booted it, and this one
  // read the host before that pass's status (a requeue faster than the cache).
  // Inserting and restarting again would eject the live image under the booted OS.
  const booted = system.powerState === 'On' && (await redfish.insertedImage(system)) === step.image;
  if (!booted) {
    await redfish.insertMedia(system, step.image);
    await redfish.bootOnce('Cd');
    await redfish.reset(system.powerState === 'On' ? 'ForceRestart' : 'On');
  }
  status.poweredOn = true;
  status.provisioning = { ...status.provisioning, image: { ...host.spec.image, url: step.image } };
  host.status = { ...host.status, provisioning: status.provisioning };
  const checked = verified ? ` (${verified.algorithm} checksum verified)` : '';
  events.normal(
    host,
    'ProvisioningComplete',
    'Provision',
    `booted ${step.image} from virtual media${checked}`,
  );
};

const deprovision: Step<'deprovision'> = async ({ host, redfish, system, status, events }) => {
  await redfish.ejectMedia(system);
  if (system.powerState !== 'Off') await redfish.reset('ForceOff');
  status.poweredOn = false;
  events.normal(host, 'DeprovisioningComplete', 'Deprovision', 'ejected the image and powered off');
};
