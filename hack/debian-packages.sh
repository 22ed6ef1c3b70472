#!/usr/bin/env bash
# Debian packages the tests use that nobody here wrote: redfishtool and
# python3-sushy (Ironic's Redfish library) drive the simulated BMC fleet in
# test/integration/bmc.test.ts; haproxy checks and runs the tenant clusters'
# generated load-balancer configs (test/unit/tenant/services/, with ssh-keygen
# from openssh-client as the referee of the jump host's key checks,
# test/integration/tenant-services.test.ts); ignition-validate (the ignition package)
# judges every Ignition config the KVM capability renders (test/unit/kvm/), and openssl every
# certificate of its workload clusters' PKI and a kubelet's CSR (test/unit/kvm/act/,
# test/integration/kvm-pki.test.ts); mmdebstrap
# makes the operator image's base (hack/build-image.sh), and skopeo, umoci and runc read,
# unpack and run that image (test/integration/image.test.ts). A real node (issue 21) runs
# containers with that runc, wires pods with the CNI plugins in /usr/lib/cni
# (containernetworking-plugins: bridge, host-local, portmap, loopback), and kube-proxy
# writes iptables rules and clears UDP flows with conntrack; gcc and libc6-dev's static
# libc build the pause binary (hack/build-node-runtime.sh). libvirt's daemon and client, QEMU and
# qemu-img run the VM hosts' real VMs (test/integration/vmhosts-libvirt.test.ts), which boot a live
# ISO made there of Debian's cloud kernel, static busybox and isolinux (genisoimage). The KVM VM
# image (hack/build-vm-image.sh, test/vm/) is made by mmdebstrap and packed into its OS image by
# mkfs.ext4 (e2fsprogs) and qemu-img; its test runs it with runc and umoci. gpg (with gpg-agent)
# signs a throwaway Flatcar release and gpgv verifies it (test/unit/kvm/vm/os-cache.test.ts). Idempotent:
# installs only what is missing.
# `make test-unit` and `make test-integration` run it first, so `make test` needs nothing installed by hand.
set -euo pipefail

PACKAGES=(redfishtool python3-sushy haproxy openssh-client ignition openssl mmdebstrap umoci skopeo runc
  containernetworking-plugins iptables conntrack gcc libc6-dev
  libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils linux-image-cloud-amd64 busybox-static
  genisoimage isolinux syslinux-common e2fsprogs gpg gpg-agent gpgv)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "hack/debian-packages.sh: no apt-get here; install ${missing[*]} (or this system's equivalents) by hand" >&2
  exit 1
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || { echo "hack/debian-packages.sh: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "hack/debian-packages.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
