#!/usr/bin/env bash
# Builds the VM image — what every VM pod of a KVMCluster runs — offline, with
# no Docker daemon and no registry, with the operator image's tooling: QEMU,
# qemu-img, iproute2 and busybox from Debian's packages (mmdebstrap, cached),
# the OS image the VMs boot (hack/build-vm-os-image.sh, cached), the pinned Node
# binary and the compiled app, packed by src/cluster/image/ into
# dist/image/nodewarden-vm.tar. Its name is the operator's default --kvm-vm-image.
#
# Usage: hack/build-vm-image.sh [OUT]     OUT defaults to dist/image/nodewarden-vm.tar
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"
OUT="${1:-dist/image/nodewarden-vm.tar}"
CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}/image"
# What the entrypoint runs: QEMU and qemu-img, ip for the pod's bridge and tap,
# busybox for the KVM probe's initramfs and the health probe's wget, gpgv for a
# Flatcar release's signatures (OS_IMAGE=flatcar).
BASE_PACKAGES="qemu-system-x86,qemu-utils,iproute2,busybox-static,gpgv"
SUITE=bookworm
log() { printf '[build-vm-image] %s\n' "$*" >&2; }

command -v mmdebstrap >/dev/null || { log "error: mmdebstrap is needed (hack/debian-packages.sh installs it)"; exit 1; }
NODE_BIN="$(NODEWARDEN_FORCE_PINNED_NODE=1 hack/node.sh)"
export PATH="$NODE_BIN:$PATH"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

OS="$("$HERE/build-vm-os-image.sh" | tail -1)"
BASE="$CACHE_ROOT/vm-base-$SUITE-${BASE_PACKAGES//,/-}"
if [[ ! -d "$BASE" ]]; then
  log "base: mmdebstrap $SUITE $BASE_PACKAGES"
  rm -rf "$BASE.partial" && mkdir -p "$(dirname "$BASE")"
  mmdebstrap --quiet --variant=essential --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --include="$BASE_PACKAGES" "$SUITE" "$BASE.partial"
  mv "$BASE.partial" "$BASE"
fi

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
log "compile: tsc -p tsconfig.build.json"
npx tsc -p tsconfig.build.json --outDir "$STAGE/dist"
mkdir -p "$STAGE/scripts"
node -e 'import("./src/cluster/image/vm-image.ts").then((m) => process.stdout.write(m.SHUTDOWN_SCRIPT))' \
  >"$STAGE/scripts/qemu-shutdown"
chmod 0755 "$STAGE/scripts/qemu-shutdown"
node src/cluster/image/main.ts --out "$OUT" --vm --base "$BASE" --os "$OS" --node "$NODE_BIN/node" \
  --dist "$STAGE/dist" --scripts "$STAGE/scripts" --packages "$BASE_PACKAGES"
