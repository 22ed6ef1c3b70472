// The VM as QEMU runs it, from the container's config: the disks qemu-img
// makes (the root an overlay over the OS image, the container-runtime and
// kubelet volumes fresh and sparse), and QEMU's arguments — the Ignition
// config through fw_cfg under Flatcar's and Ignition's names, the pod's name
// as the hostname, the disks by the serials the guest mounts, the etcd share
// on masters, the tap, QMP and the guest's ready port. Pure.
import {
  ETCD_SHARE_TAG,
  GUEST_READY_PORT,
  HOSTNAME_FW_CFG,
  IGNITION_FW_CFG_NAMES,
  type OsImage,
} from '../../api/vm-image.ts';
import type { VmConfig, VmPaths } from './config.ts';
import { flatcarBootFiles } from './os-release.ts';

export type Accel = 'kvm' | 'qemu';

/** The files the container makes and QEMU uses, under VmPaths. */
export function vmFiles(paths: VmPaths) {
  return {
    ignition: `${paths.state}/config.ign`,
    root: `${paths.state}/root.qcow2`,
    docker: `${paths.state}/dockerfs.raw`,
    kubelet: `${paths.state}/kubeletfs.raw`,
    qmp: `${paths.run}/qmp.sock`,
    guest: `${paths.run}/guest.sock`,
    pid: `${paths.run}/qemu.pid`,
    kernel: `${paths.osImage}/vmlinuz`,
    initrd: `${paths.osImage}/initrd.img`,
    osDisk: `${paths.osImage}/root.qcow2`,
  };
}

/** The kernel and initramfs QEMU boots: the Debian OS image's, or the cached Flatcar release's PXE pair. */
export function bootFiles(config: VmConfig, paths: VmPaths): { kernel: string; initrd: string } {
  if (config.osImage === 'flatcar') return flatcarBootFiles(paths.osCache, config.osVersion ?? '');
  const f = vmFiles(paths);
  return { kernel: f.kernel, initrd: f.initrd };
}

/** qemu-img commands, in order: a fresh VM's disks (a new pod is a new VM). */
export function diskCommands(config: VmConfig, paths: VmPaths): string[][] {
  const f = vmFiles(paths);
  // Flatcar's PXE image runs from its initramfs: the root disk starts empty, for Ignition to format.
  const root =
    config.osImage === 'flatcar'
      ? ['qemu-img', 'create', '-q', '-f', 'qcow2', f.root, config.disks.os]
      : ['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', f.osDisk, f.root, config.disks.os];
  return [
    root,
    ['qemu-img', 'create', '-q', '-f', 'raw', f.docker, config.disks.docker],
    ['qemu-img', 'create', '-q', '-f', 'raw', f.kubelet, config.disks.kubelet],
  ];
}

/**
 * The kernel's command line. Debian: the root disk by the serial QEMU gives it.
 * Flatcar: its PXE first boot, with Ignition reading the config from QEMU's
 * fw_cfg (platform qemu); no root=, the PXE image runs from its initramfs.
 * Both: the console on the serial port (the pod's log), eth0 as the contract names it.
 */
export function kernelCommandLine(os: OsImage = 'debian'): string {
  if (os === 'flatcar')
    return 'flatcar.first_boot=1 flatcar.oem.id=qemu ignition.platform.id=qemu console=ttyS0 net.ifnames=0 panic=10';
  return 'root=/dev/disk/by-id/virtio-rootfs rw console=ttyS0 net.ifnames=0 panic=10';
}

export interface QemuInputs {
  config: VmConfig;
  paths: VmPaths;
  accel: Accel;
  /** The guest's MAC: the pod's own, so the pod's neighbours keep theirs for the address. */
  mac: string;
  /** The tap in the pod's bridge. */
  tap: string;
}

export function qemuArgs(q: QemuInputs): string[] {
  const { config, paths } = q;
  const f = vmFiles(paths);
  const boot = bootFiles(config, paths);
  const drive = (id: string, file: string, format: string) => [
    ...['-drive', `if=none,id=${id},file=${file},format=${format},cache=unsafe,discard=unmap`],
    ...['-device', `virtio-blk-pci,drive=${id},serial=${id}`],
  ];
  return [
    ...['-name', config.hostname, '-nodefaults', '-no-user-config', '-display', 'none'],
    // TCG has no host CPU to pass through; "max" gives it every feature it emulates.
    ...[
      '-machine',
      `q35,accel=${q.accel === 'kvm' ? 'kvm' : 'tcg'}`,
      '-cpu',
      q.accel === 'kvm' ? 'host,pmu=off' : 'max',
    ],
    ...['-smp', String(config.cores), '-m', config.memory],
    ...['-kernel', boot.kernel, '-initrd', boot.initrd, '-append', kernelCommandLine(config.osImage)],
    ...IGNITION_FW_CFG_NAMES.flatMap((name) => ['-fw_cfg', `name=${name},file=${f.ignition}`]),
    ...['-fw_cfg', `name=${HOSTNAME_FW_CFG},string=${config.hostname}`],
    ...drive('rootfs', f.root, 'qcow2'),
    ...drive('dockerfs', f.docker, 'raw'),
    ...drive('kubeletfs', f.kubelet, 'raw'),
    ...(config.role === 'master'
      ? [
          ...['-fsdev', `local,id=${ETCD_SHARE_TAG},path=${paths.etcdData},security_model=none`],
          ...['-device', `virtio-9p-pci,fsdev=${ETCD_SHARE_TAG},mount_tag=${ETCD_SHARE_TAG}`],
        ]
      : []),
    ...['-netdev', `tap,id=net0,ifname=${q.tap},script=no,downscript=no`],
    ...['-device', `virtio-net-pci,netdev=net0,mac=${q.mac}`],
    ...['-device', 'virtio-rng-pci'],
    ...['-device', 'virtio-serial-pci'],
    ...['-chardev', `socket,id=guest,path=${f.guest},server=on,wait=off`],
    ...['-device', `virtserialport,chardev=guest,name=${GUEST_READY_PORT}`],
    ...['-qmp', `unix:${f.qmp},server=on,wait=off`],
    ...['-pidfile', f.pid],
    // The serial console on stdout: the pod's log.
    ...['-serial', 'stdio'],
  ];
}
