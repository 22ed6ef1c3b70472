import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  GUEST_IMAGES_DIR,
  GUEST_IMAGES_UNIT,
  GUEST_READY_LINE,
  GUEST_READY_PORT,
  GUEST_REPORT_PREFIX,
  HOSTNAME_FW_CFG,
  IGNITION_FW_CFG_NAMES,
} from '../../../../src/api/vm-image.ts';
import { CNI_BIN_DIR } from '../../../../src/kvm/plan/cni.ts';
import { CONTAINERD_SOCKET, KUBELET_BIN } from '../../../../src/kvm/plan/node-files.ts';
import { DEFAULT_PATHS, type VmConfig, vmConfigFromEnv } from '../../../../src/kvm/vm/config.ts';
import { diskCommands, qemuArgs } from '../../../../src/kvm/vm/qemu-args.ts';
import { WORKER_ENV as ENV } from './vm-env.ts';

const worker = vmConfigFromEnv(ENV);
const master: VmConfig = { ...worker, role: 'master' };
const args = (config: VmConfig, accel: 'kvm' | 'qemu' = 'qemu') =>
  qemuArgs({ config, paths: DEFAULT_PATHS, accel, mac: '0a:58:0a:f4:01:05', tap: 'tap-vm' });
/** The values of every `flag` in argv. */
const values = (argv: string[], flag: string) => argv.flatMap((a, i) => (argv[i - 1] === flag ? [a] : []));

describe("the VM container's environment", () => {
  it('reads every variable of the contract', () => {
    assert.deepEqual(worker, {
      cores: 2,
      memory: '2048M',
      role: 'worker',
      osImage: 'debian',
      osVersion: '4230.2.0',
      disks: { os: '20G', docker: '50G', kubelet: '5G' },
      hostname: 'worker-w1-7d9f-x2',
      healthPort: 23007,
      graceSeconds: 600,
    });
  });

  it('names every bad or missing value at once', () => {
    const { CORES: _c, ...rest } = ENV;
    assert.throws(
      () => vmConfigFromEnv({ ...rest, MEMORY: '2G', ROLE: 'boss', DISK_KUBELET: '5Gi' }),
      (e: Error) =>
        ['CORES is not set', 'MEMORY=2G', 'ROLE=boss', 'DISK_KUBELET=5Gi'].every((p) =>
          e.message.includes(p),
        ),
    );
  });
});

describe('QEMU as the container runs it', () => {
  it("hands the Ignition config over under Flatcar's and Ignition's fw_cfg names, and the pod name as hostname", () => {
    const fw = values(args(worker), '-fw_cfg');
    for (const name of IGNITION_FW_CFG_NAMES)
      assert.ok(fw.includes(`name=${name},file=/var/lib/vm/config.ign`), name);
    assert.ok(fw.includes(`name=${HOSTNAME_FW_CFG},string=worker-w1-7d9f-x2`));
  });

  it('gives the disks the serials the guest finds them by', () => {
    const devices = values(args(worker), '-device').filter((d) => d.startsWith('virtio-blk-pci'));
    assert.deepEqual(
      devices.map((d) => /serial=(\w+)/.exec(d)?.[1]),
      ['rootfs', 'dockerfs', 'kubeletfs'],
    );
  });

  it('makes the disks with qemu-img: the root over the OS image, the volumes at their sizes', () => {
    assert.deepEqual(diskCommands(worker, DEFAULT_PATHS), [
      [
        'qemu-img',
        'create',
        '-q',
        '-f',
        'qcow2',
        '-F',
        'qcow2',
        '-b',
        '/var/lib/nodewarden/os/root.qcow2',
        '/var/lib/vm/root.qcow2',
        '20G',
      ],
      ['qemu-img', 'create', '-q', '-f', 'raw', '/var/lib/vm/dockerfs.raw', '50G'],
      ['qemu-img', 'create', '-q', '-f', 'raw', '/var/lib/vm/kubeletfs.raw', '5G'],
    ]);
  });

  it('shares etcd over 9p on masters only', () => {
    const share = (c: VmConfig) => values(args(c), '-device').filter((d) => d.startsWith('virtio-9p-pci'));
    assert.deepEqual(share(master), ['virtio-9p-pci,fsdev=etcdshare,mount_tag=etcdshare']);
    assert.deepEqual(share(worker), []);
    assert.ok(values(args(master), '-fsdev')[0]?.includes('path=/etc/kubernetes/data/etcd'));
  });

  it('runs under KVM with the host CPU, or under TCG with every feature TCG emulates', () => {
    assert.deepEqual(values(args(worker, 'kvm'), '-machine'), ['q35,accel=kvm']);
    assert.deepEqual(values(args(worker, 'kvm'), '-cpu'), ['host,pmu=off']);
    assert.deepEqual(values(args(worker, 'qemu'), '-machine'), ['q35,accel=tcg']);
    assert.deepEqual(values(args(worker, 'qemu'), '-cpu'), ['max']);
  });

  it("the guest's NIC has the pod's MAC on the pod bridge's tap; the console is the pod's log", () => {
    const a = args(worker);
    assert.deepEqual(values(a, '-netdev'), ['tap,id=net0,ifname=tap-vm,script=no,downscript=no']);
    assert.ok(values(a, '-device').includes('virtio-net-pci,netdev=net0,mac=0a:58:0a:f4:01:05'));
    assert.deepEqual(values(a, '-serial'), ['stdio']);
    assert.deepEqual(values(a, '-smp'), ['2']);
    assert.deepEqual(values(a, '-m'), ['2048M']);
  });
});

describe('the Debian OS image keeps its side of the contract', () => {
  const hack = join(import.meta.dirname, '../../../../hack/vm-os-image');
  it('the guest says it is up on the port the container listens on, with the line it waits for', () => {
    const script = readFileSync(join(hack, 'guest-ready'), 'utf8');
    assert.ok(script.includes(`/dev/virtio-ports/${GUEST_READY_PORT}`));
    assert.ok(script.includes(`echo ${GUEST_READY_LINE} >`));
    assert.ok(script.includes(`echo "${GUEST_REPORT_PREFIX}$*"`));
    assert.ok(
      values(args(worker), '-device').includes(`virtserialport,chardev=guest,name=${GUEST_READY_PORT}`),
    );
  });

  it("the first boot reads Ignition's own fw_cfg name (platform qemu)", () => {
    const script = readFileSync(join(hack, 'ignition-firstboot'), 'utf8');
    assert.ok(script.includes('--platform=qemu'));
    assert.ok(IGNITION_FW_CFG_NAMES.includes('opt/com.coreos/config'));
  });

  it('the images unit the kubelet waits for: after containerd, pulled in by the kubelet alone', () => {
    const unit = readFileSync(join(hack, GUEST_IMAGES_UNIT), 'utf8');
    const lines = unit.split('\n');
    assert.ok(lines.includes('Requires=containerd.service'), unit);
    assert.ok(lines.includes('After=containerd.service nodewarden-ignition.service'), unit);
    assert.ok(lines.includes('Type=oneshot') && lines.includes('RemainAfterExit=yes'), unit);
    assert.ok(lines.includes('ExecStart=/usr/local/lib/nodewarden/import-images'), unit);
    assert.ok(lines.includes('StandardOutput=journal+console'), unit);
    // Enabled at boot, it would start containerd before Ignition wrote its config and disk.
    assert.equal(lines.includes('[Install]'), false);
  });

  it("import-images puts every archive into containerd's Kubernetes namespace and says so on the console", () => {
    const script = readFileSync(join(hack, 'import-images'), 'utf8');
    assert.ok(script.includes(`DIR=${GUEST_IMAGES_DIR}\n`));
    assert.ok(script.includes(`SOCKET=${CONTAINERD_SOCKET}\n`));
    assert.match(
      script,
      /ctr --address "\$SOCKET" --namespace k8s\.io images import --all-platforms "\$tar"/,
    );
    assert.ok(script.includes('else set -- "$DIR/pause.tar"; fi'), 'a worker imports only the sandbox image');
    assert.ok(script.includes(`echo "${GUEST_REPORT_PREFIX}$*"`));
    assert.ok(script.includes('else set -- "$DIR/pause.tar"; fi'), 'a worker imports only the sandbox image');
    assert.ok(script.includes('say "images=$n in $(($(date +%s) - start))s"'));
  });

  it('the build carries the images, the kubelet where its unit runs it, and the CNI plugins', () => {
    const build = readFileSync(join(hack, '../build-vm-os-image.sh'), 'utf8');
    assert.ok(build.includes(`IMAGES_DIR=${GUEST_IMAGES_DIR}\n`));
    assert.ok(build.includes('--out "$ROOTFS$IMAGES_DIR/$component.tar"'));
    // Every name from src/api/workload-images.ts, which is part of the cache key with the packer.
    assert.ok(build.includes('for (const c of m.WORKLOAD_IMAGES) console.log(c, m.workloadImage(c,'));
    assert.ok(build.includes('IMAGE_SOURCES=("$ROOT"/src/api/workload-images.ts "$ROOT"/src/cluster/image/'));
    assert.match(build, /KEY=.*cat "\$0" "\$HERE"\/vm-os-image\/\* "\$\{IMAGE_SOURCES\[@\]\}"/);
    assert.ok(build.includes(`"$KUBE_BIN/kubelet" "$ROOTFS${KUBELET_BIN}"`));
    assert.ok(build.includes('{ignition-firstboot,guest-ready,guest-progress,import-images}'));
    const packages = /^PACKAGES="([^"]+)"$/m.exec(build)?.[1]?.split(',') ?? [];
    assert.ok(packages.includes('containernetworking-plugins'), packages.join(','));
    assert.equal(CNI_BIN_DIR, '/usr/lib/cni', "Debian's containernetworking-plugins");
  });
});
