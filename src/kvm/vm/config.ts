// What the VM container is asked for, read from the environment the operator
// renders (src/api/vm-image.ts, VmEnv): pure, so every bad value is named
// before anything is made.
import {
  DEFAULT_FLATCAR_MIRROR,
  DEFAULT_OS_IMAGE,
  type OsImage,
  VM_OS_IMAGE_DIR,
  VmEnv,
  VmMounts,
  type VmRole,
} from '../../api/vm-image.ts';
import { isFlatcarVersion } from './os-release.ts';

export interface VmConfig {
  cores: number;
  /** QEMU's -m, e.g. "8192M". */
  memory: string;
  role: VmRole;
  osImage: OsImage;
  osVersion?: string;
  /** OS_IMAGE=flatcar: where releases are downloaded from, and (optional) the key file they must verify against. */
  flatcar?: { mirror: string; keyring?: string };
  /** qemu-img sizes, e.g. "20G". */
  disks: { os: string; docker: string; kubelet: string };
  hostname: string;
  healthPort: number;
  graceSeconds: number;
}

/** Where the container reads its inputs and keeps its state. */
export interface VmPaths {
  /** The ConfigMap's user_data (gzip, base64). */
  userData: string;
  /** The OS image: vmlinuz, initrd.img, root.qcow2. */
  osImage: string;
  /** The VM's disks and the decoded Ignition config (an emptyDir). */
  state: string;
  /** Masters: the etcd share's host side. */
  etcdData: string;
  /** Sockets and the pid file. */
  run: string;
  /** OS_IMAGE=flatcar: the host's release cache (a hostPath). */
  osCache: string;
}

export const DEFAULT_PATHS: VmPaths = {
  userData: `${VmMounts.ignition}/user_data`,
  osImage: VM_OS_IMAGE_DIR,
  state: VmMounts.rootfs,
  etcdData: VmMounts.etcdData,
  run: '/run/nodewarden-vm',
  osCache: VmMounts.osCache,
};

const SIZE = /^[1-9][0-9]*[KMGT]$/;

export function vmConfigFromEnv(env: Readonly<Record<string, string | undefined>>): VmConfig {
  const problems: string[] = [];
  const need = (name: string, ok: (v: string) => boolean, what: string): string => {
    const v = env[name];
    if (v === undefined || v === '') problems.push(`${name} is not set (${what})`);
    else if (!ok(v)) problems.push(`${name}=${v} is not ${what}`);
    return v ?? '';
  };
  const whole = (v: string) => /^[1-9][0-9]*$/.test(v);
  const cores = need(VmEnv.cores, whole, 'a whole number of CPUs');
  const memory = need(VmEnv.memory, (v) => /^[1-9][0-9]*M$/.test(v), 'MiB like 8192M');
  const role = need(VmEnv.role, (v) => v === 'master' || v === 'worker', 'master or worker');
  const osImage = env[VmEnv.osImage] || DEFAULT_OS_IMAGE;
  if (osImage !== 'debian' && osImage !== 'flatcar')
    problems.push(`${VmEnv.osImage}=${osImage} is not debian or flatcar`);
  const os = need(VmEnv.diskOs, (v) => SIZE.test(v), 'a size like 20G');
  const docker = need(VmEnv.diskDocker, (v) => SIZE.test(v), 'a size like 50G');
  const kubelet = need(VmEnv.diskKubelet, (v) => SIZE.test(v), 'a size like 5G');
  const hostname = need(
    VmEnv.hostname,
    (v) => /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(v),
    'a DNS name',
  );
  const port = need(VmEnv.healthPort, (v) => whole(v) && Number(v) < 65536, 'a port');
  const grace = need(VmEnv.graceSeconds, whole, 'whole seconds');
  if (osImage === 'flatcar')
    need(VmEnv.osVersion, isFlatcarVersion, 'a Flatcar version like 4230.2.0 (OS_IMAGE=flatcar)');
  if (problems.length > 0) throw new Error(`the VM's environment: ${problems.join('; ')}`);
  const osVersion = env[VmEnv.osVersion];
  const keyring = env[VmEnv.osKeyring];
  return {
    cores: Number(cores),
    memory,
    role: role as VmRole,
    osImage: osImage as OsImage,
    ...(osVersion ? { osVersion } : {}),
    ...(osImage === 'flatcar'
      ? {
          flatcar: { mirror: env[VmEnv.osMirror] || DEFAULT_FLATCAR_MIRROR, ...(keyring ? { keyring } : {}) },
        }
      : {}),
    disks: { os, docker, kubelet },
    hostname,
    healthPort: Number(port),
    graceSeconds: Number(grace),
  };
}
