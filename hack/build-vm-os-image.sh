#!/usr/bin/env bash
# Builds the VM OS image the VM image boots when no Flatcar version is asked for
# (src/api/vm-image.ts, OS_IMAGE=debian): a Debian root file system made by
# mmdebstrap from Debian's packages — the kernel, systemd, runc, xfsprogs,
# openssh-server, Ignition and the CNI plugins — plus the kubelet
# hack/build-controlplane.sh builds, the containerd hack/build-node-runtime.sh
# builds (Debian's containerd 1.6 cannot answer kubelet 1.37's CRI), the control
# plane's images (src/api/workload-images.ts) as OCI archives, and the units of
# hack/vm-os-image/: Ignition from fw_cfg on the first boot, the images into
# containerd on every boot, then a ready marker on a virtio-serial port. Written
# as an ext4 file system (mkfs.ext4 -d, no loop device, no root mount) converted
# to a compressed qcow2, with the kernel and the initramfs beside it for QEMU's
# -kernel/-initrd. Cached under a folder keyed by its inputs; a warm cache
# returns at once.
#
# Usage: hack/build-vm-os-image.sh        prints the folder on the last line:
#        vmlinuz, initrd.img, root.qcow2, packages.txt, build-seconds
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
# shellcheck source=versions.env
source "$HERE/versions.env"
CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
SUITE=bookworm
# containernetworking-plugins: bridge, host-local and loopback in /usr/lib/cni, which the
# node's CNI config and containerd's bin_dir name (src/kvm/plan/cni.ts, node-files.ts).
PACKAGES="systemd,systemd-sysv,systemd-resolved,udev,dbus,kmod,linux-image-amd64,initramfs-tools,ignition,e2fsprogs,xfsprogs,util-linux,iproute2,iputils-ping,openssh-server,sudo,runc,iptables,conntrack,ca-certificates,containernetworking-plugins"
# Where the control plane's images go (src/api/vm-image.ts GUEST_IMAGES_DIR; import-images reads them).
IMAGES_DIR=/usr/local/share/nodewarden/images
# The images' names and packer: their sources are inputs of the image too.
IMAGE_SOURCES=("$ROOT"/src/api/workload-images.ts "$ROOT"/src/cluster/image/{main,oci,tar,tree,static-image}.ts)
log() { printf '[build-vm-os-image] %s\n' "$*" >&2; }

KUBE_BIN="$("$HERE/build-controlplane.sh" | tail -1)"
RUNTIME="$("$HERE/build-node-runtime.sh" | tail -1)"
KEY="$( (echo "$SUITE $PACKAGES"; cat "$0" "$HERE"/vm-os-image/* "${IMAGE_SOURCES[@]}"
  sha256sum "$KUBE_BIN"/{kubelet,etcd,kube-apiserver,kube-controller-manager,kube-scheduler} \
    "$RUNTIME"/{containerd,containerd-shim-runc-v2,ctr,pause} | cut -c1-64) | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/vm-os-image/debian-${SUITE}_kube-${KUBE_VERSION}_containerd-${CONTAINERD_VERSION}_$KEY"
if [[ -f "$OUT/root.qcow2" && -f "$OUT/vmlinuz" && -f "$OUT/initrd.img" ]]; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi
for tool in mmdebstrap mkfs.ext4 qemu-img; do
  command -v "$tool" >/dev/null || { log "error: $tool is needed (hack/debian-packages.sh installs it)"; exit 1; }
done
[[ "$(id -u)" == 0 ]] || { log "error: mmdebstrap runs the packages' scripts in a chroot, which needs root"; exit 1; }

# The control plane's images, packed as build-node-runtime.sh packs its own: each
# one binary at /<component>, named by workloadImage() for KUBE_VERSION. pause runs
# as 65535, as upstream's image does. A fixed date: the same binaries, the same digests.
pack_images() {
  local node names component name bin user
  node="$("$HERE/node.sh")/node"
  names="$("$node" -e 'import(process.argv[1]).then((m) => {
    for (const c of m.WORKLOAD_IMAGES) console.log(c, m.workloadImage(c, process.argv[2]));
  })' "$ROOT/src/api/workload-images.ts" "$KUBE_VERSION")"
  [[ -n "$names" ]] || { log "error: no image names from src/api/workload-images.ts"; exit 1; }
  while read -r component name; do
    case "$component" in
      pause) bin="$RUNTIME/pause" user=65535 ;;
      *) bin="$KUBE_BIN/$component" user= ;;
    esac
    log "image: $name"
    SOURCE_DATE_EPOCH=0 "$node" "$ROOT/src/cluster/image/main.ts" --out "$ROOTFS$IMAGES_DIR/$component.tar" \
      --static "$bin" --name "$name" ${user:+--user "$user"} >&2
  done <<<"$names"
}

START=$(date +%s)
# The time of the last change to the inputs, not of the last commit: one key, one time.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$HERE" log -1 --format=%ct -- build-vm-os-image.sh vm-os-image versions.env "${IMAGE_SOURCES[@]}" 2>/dev/null || echo 0)}"
WORK="$OUT.partial"
rm -rf "$WORK" && mkdir -p "$WORK"
trap 'rm -rf "$WORK/rootfs" "$WORK/root.raw"' EXIT
ROOTFS="$WORK/rootfs"
log "rootfs: mmdebstrap $SUITE $PACKAGES"
# The generic kernel, not the cloud one: a master's etcd share is 9p, which the cloud
# kernel leaves out. Drivers no VM has are left out of it (dpkg's patterns have no braces).
EXCLUDES=()
for p in usr/share/{doc,man,info,locale} lib/modules/'*'/kernel/sound \
  lib/modules/'*'/kernel/drivers/{gpu,media,net/wireless,infiniband,staging,bluetooth,iio,isdn,net/ethernet/mellanox}; do
  EXCLUDES+=(--dpkgopt="path-exclude=/$p/*")
done
mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' \
  --include="$PACKAGES" "${EXCLUDES[@]}" "$SUITE" "$ROOTFS"

log "rootfs: kubelet, containerd, first-boot units"
# /opt/bin, not /usr/local/bin: the node's kubelet unit (src/kvm/plan/node-files.ts KUBELET_BIN)
# runs it from there, the one place Flatcar, whose /usr is read-only, could hold it too.
install -D -m 0755 "$KUBE_BIN/kubelet" "$ROOTFS/opt/bin/kubelet"
for b in containerd containerd-shim-runc-v2 ctr; do install -m 0755 "$RUNTIME/$b" "$ROOTFS/usr/local/bin/$b"; done
install -d "$ROOTFS/usr/local/lib/nodewarden"
install -m 0755 "$HERE"/vm-os-image/{ignition-firstboot,guest-ready,guest-progress,import-images} "$ROOTFS/usr/local/lib/nodewarden/"
install -D -m 0755 "$HERE/vm-os-image/setfiles" "$ROOTFS/usr/local/lib/nodewarden/no-selinux/setfiles"
install -m 0644 "$HERE"/vm-os-image/*.service "$ROOTFS/etc/systemd/system/"
install -m 0644 "$HERE/vm-os-image/00-pod-eth0.network" "$ROOTFS/etc/systemd/network/"
install -m 0644 "$HERE/vm-os-image/sshd-ignition-keys.conf" "$ROOTFS/etc/ssh/sshd_config.d/ignition-keys.conf"
# Not nodewarden-images.service: the kubelet's unit pulls it in.
chroot "$ROOTFS" systemctl enable systemd-networkd.service systemd-resolved.service nodewarden-ignition.service nodewarden-guest-ready.service nodewarden-guest-progress.service >/dev/null 2>&1
chroot "$ROOTFS" systemctl enable serial-getty@ttyS0.service >/dev/null 2>&1 || true
pack_images
# The DNS servers the pod's DHCP lease names (networkd hands them to resolved): without
# this a worker could not resolve the master Service it joins through. The list itself,
# not resolved's 127.0.0.53 stub, which the kubelet would hand on to pods.
ln -sfn ../run/systemd/resolve/resolv.conf "$ROOTFS/etc/resolv.conf"
# Ignition looks here to decide on SELinux relabelling; Debian runs without SELinux.
install -d "$ROOTFS/etc/selinux" && printf 'SELINUX=disabled\nSELINUXTYPE=none\n' >"$ROOTFS/etc/selinux/config"
# The groups Ignition configs put users in (Flatcar has docker).
chroot "$ROOTFS" groupadd --system docker
# A first boot: no machine id, no host keys, no hostname of the build machine.
: >"$ROOTFS/etc/machine-id"
rm -f "$ROOTFS"/etc/ssh/ssh_host_* "$ROOTFS/etc/hostname" "$ROOTFS/var/lib/dbus/machine-id"
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin
chroot "$ROOTFS" dpkg-query -W -f='${Package} ${Version}\n' >"$WORK/packages.txt"
# What a build leaves that depends on when and where it ran, not on its inputs: logs,
# caches, backups; and every time stamp clamped to SOURCE_DATE_EPOCH.
rm -rf "$ROOTFS"/var/log/* "$ROOTFS"/var/cache/ldconfig/aux-cache "$ROOTFS"/var/cache/debconf/*-old \
  "$ROOTFS"/var/lib/dpkg/*-old "$ROOTFS"/etc/{passwd,group,shadow,gshadow,subuid,subgid}- "$ROOTFS"/var/lib/systemd/random-seed
find "$ROOTFS" -newermt "@$SOURCE_DATE_EPOCH" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +
cp -L "$ROOTFS/vmlinuz" "$WORK/vmlinuz"
cp -L "$ROOTFS/initrd.img" "$WORK/initrd.img"

log "disk: mkfs.ext4 -d, qemu-img convert -c"
MIB=$(( $(du -sm "$ROOTFS" | cut -f1) * 5 / 4 + 256 ))
# A fixed UUID, hash seed and time: the same tree gives the same file system.
E2FSPROGS_FAKE_TIME="$SOURCE_DATE_EPOCH" mkfs.ext4 -q -F -L root -U 6d3f0a52-6c43-4a47-9c1e-3c5b2d8e0a11 \
  -E hash_seed=1b2f6c1e-0c4d-4f55-8a3e-5b7a2f9d4c60,root_owner=0:0 -d "$ROOTFS" "$WORK/root.raw" "${MIB}M"
qemu-img convert -c -f raw -O qcow2 "$WORK/root.raw" "$WORK/root.qcow2"
echo "$(($(date +%s) - START))" >"$WORK/build-seconds"
rm -rf "$ROOTFS" "$WORK/root.raw"
rm -rf "$OUT" && mv "$WORK" "$OUT"
log "built in $(($(date +%s) - START))s ($(du -sh "$OUT" | cut -f1)): $OUT"
echo "$OUT"
