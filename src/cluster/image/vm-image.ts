// The VM image as `make vm-image` builds it (hack/build-vm-image.sh gathers the
// inputs), with the operator image's tooling: four layers, lowest first —
// QEMU, qemu-img, iproute2 and busybox from Debian's packages; the Debian OS
// image the VMs boot (`make vm-os-image`); the pinned Node binary; the app's
// compiled code, whose src/kvm/vm/main.ts is the entrypoint and the preStop
// hook. Its contract with the operator is src/api/vm-image.ts.
import { join } from 'node:path';
import { VM_OS_IMAGE_DIR, VM_SHUTDOWN_COMMAND, vmImageName } from '../../api/vm-image.ts';
import { type BuiltImage, buildImage, type ImageRunConfig } from './oci.ts';
import { BASE_SKIP } from './operator-image.ts';
import { layerEntries } from './tree.ts';

const ENTRYPOINT_JS = '/app/dist/kvm/vm/main.js';

/** What the image runs: as root, since it makes a bridge and a tap in the pod's namespace and opens /dev/kvm. */
export const VM_RUN_CONFIG: ImageRunConfig = {
  Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'NODE_ENV=production'],
  WorkingDir: '/',
  Entrypoint: ['node', ENTRYPOINT_JS, 'run'],
};

/** The preStop hook's script, at VM_SHUTDOWN_COMMAND[0]. */
export const SHUTDOWN_SCRIPT = `#!/bin/sh\nexec node ${ENTRYPOINT_JS} shutdown "$@"\n`;

export interface VmImageInputs {
  /** Debian's root file system with QEMU (mmdebstrap's output folder). */
  base: string;
  /** The OS image folder (hack/build-vm-os-image.sh): vmlinuz, initrd.img, root.qcow2. */
  os: string;
  node: string;
  /** The compiled app (tsc -p tsconfig.build.json). */
  dist: string;
  /** A folder holding the shutdown script as the file named like VM_SHUTDOWN_COMMAND[0]. */
  scripts: string;
  version: string;
  created: number;
  basePackages: string;
}

export function buildVmImage(inputs: VmImageInputs): BuiltImage {
  const os = VM_OS_IMAGE_DIR.slice(1);
  const shutdown = (VM_SHUTDOWN_COMMAND[0] ?? '').slice(1);
  return buildImage({
    names: [vmImageName(inputs.version)],
    created: inputs.created,
    layers: [
      {
        entries: layerEntries([{ from: inputs.base, to: '', skip: (p) => BASE_SKIP.test(p) }]),
        createdBy: `mmdebstrap --variant=essential --include=${inputs.basePackages}`,
      },
      {
        entries: layerEntries(
          ['vmlinuz', 'initrd.img', 'root.qcow2', 'packages.txt'].map((f) => ({
            from: join(inputs.os, f),
            to: `${os}/${f}`,
          })),
        ),
        createdBy: 'hack/build-vm-os-image.sh',
      },
      { entries: layerEntries([{ from: inputs.node, to: 'usr/local/bin/node' }]), createdBy: 'node' },
      {
        entries: layerEntries([
          { from: inputs.dist, to: 'app/dist' },
          { from: join(inputs.scripts, shutdown), to: shutdown },
        ]),
        createdBy: 'nodewarden: dist, the preStop hook',
      },
    ],
    config: {
      ...VM_RUN_CONFIG,
      Labels: {
        'org.opencontainers.image.title': 'nodewarden-vm',
        'org.opencontainers.image.version': inputs.version,
      },
    },
  });
}
