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
} from '../../api/vm-image.ts';
import type { VmConfig, VmPaths } from './config.ts';

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

/** qemu-img commands, in order: a fresh VM's disks (a new pod is a new VM). */
export function diskCommands(config: VmConfig, paths: VmPaths): string[][] {
  const f = vmFiles(paths);
  return [
    ['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', f.osDisk, f.root, config.disks.os],
    ['qemu-img', 'create', '-q', '-f', 'raw', f.docker, config.disks.docker],
    ['qemu-img', 'create', '-q', '-f', 'raw', f.kubelet, config.disks.kubelet],
  ];
}

/** The kernel's command line: the root disk by the serial QEMU gives it, the console on the serial port. */
export function kernelCommandLine(): string {
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
    ...['-kernel', f.kernel, '-initrd', f.initrd, '-append', kernelCommandLine()],
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
