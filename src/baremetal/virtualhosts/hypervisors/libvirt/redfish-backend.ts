// The VM host's libvirt domains as the Redfish service's backend (the same
// service the simulated BMC fleet serves, src/redfish/): power read from the
// domain's state; ComputerSystem.Reset On, ForceOff, GracefulShutdown and
// the restarts as start, destroy, shutdown (ACPI) and reset; the boot
// override kept in the domain's record and applied at its next start;
// virtual media fetched from its URL, uploaded into the agent's storage pool
// and put in the domain's CD drive.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  type BootPatch,
  patchedBoot,
  type RedfishBackend,
  RedfishBackendError,
  type RedfishSystem,
  type ResetType,
} from '../../../../redfish/backend.ts';
import type { HeldDomain, LibvirtVmHost } from './vm-host.ts';

/** The largest image virtual media takes (a live ISO is far smaller). */
const MAX_IMAGE_BYTES = 4 * 1024 ** 3;
const FETCH_TIMEOUT_MS = 300_000;

export function systemOf(d: HeldDomain, virtType: 'kvm' | 'qemu'): RedfishSystem {
  const vm = d.record.definition;
  return {
    spec: {
      id: vm.id,
      kind: 'vm',
      cpus: vm.flavor.cpus,
      memoryMiB: vm.flavor.memoryMiB,
      diskGB: vm.disks[0]?.sizeGB ?? 0,
      nics: vm.nics.map((n) => ({ name: n.name, mac: n.mac, ...(n.ip ? { ip: n.ip } : {}) })),
      credentials: vm.credentials,
    },
    power: d.running ? 'On' : 'Off',
    boot: d.record.boot,
    ...(d.record.media ? { virtualMedia: d.record.media } : {}),
    model: `libvirt domain (${virtType === 'kvm' ? 'KVM' : 'QEMU TCG'})`,
  };
}

export function libvirtBackend(host: LibvirtVmHost): RedfishBackend {
  const must = async (id: string) => {
    const d = await host.get(id);
    if (!d) throw new RedfishBackendError(404, `no VM "${id}"`);
    return d;
  };
  return {
    system: async (id) => {
      const d = await host.get(id);
      return d && systemOf(d, host.virtType);
    },
    systems: async () => (await host.list()).map((d) => systemOf(d, host.virtType)),
    reset: (id: string, type: ResetType) => reset(host, id, type),
    setBoot: async (id: string, patch: BootPatch) => {
      const d = await must(id);
      const boot = patchedBoot(d.record.boot, patch);
      return systemOf({ ...d, record: await host.setBoot(id, boot) }, host.virtType);
    },
    insertMedia: async (id: string, image: string) => {
      await must(id);
      await withDownload(image, (file, bytes) => host.insertMedia(id, image, file, bytes));
    },
    ejectMedia: (id: string) => host.ejectMedia(id),
  };
}

function reset(host: LibvirtVmHost, id: string, type: ResetType): Promise<void> {
  switch (type) {
    case 'On':
      return host.powerOn(id);
    case 'ForceOff':
      return host.powerOff(id, false);
    case 'GracefulShutdown':
      return host.powerOff(id, true);
    case 'GracefulRestart':
    case 'ForceRestart':
      return host.restart(id);
  }
}

/** Fetches `url` (http, https or file) into a file of ours for the duration of `use`. */
async function withDownload(url: string, use: (file: string, bytes: number) => Promise<void>): Promise<void> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RedfishBackendError(400, `Image ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol === 'file:') {
    const path = decodeURIComponent(u.pathname);
    return use(path, statSync(path).size);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new RedfishBackendError(400, `Image ${url}: only http, https and file URLs are fetched`);
  const dir = mkdtempSync(join(tmpdir(), 'nw-media-'));
  try {
    const res = await fetch(u, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) }).catch((err: unknown) => {
      throw new RedfishBackendError(400, `Image ${url} cannot be fetched: ${(err as Error).message}`);
    });
    if (!res.ok || !res.body) throw new RedfishBackendError(400, `Image ${url} answered HTTP ${res.status}`);
    const length = Number(res.headers.get('content-length') ?? 0);
    if (length > MAX_IMAGE_BYTES) throw new RedfishBackendError(400, `Image ${url} is larger than 4 GiB`);
    const file = join(dir, 'image.iso');
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(file));
    await use(file, statSync(file).size);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
