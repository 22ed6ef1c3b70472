#!/usr/bin/env bash
# Builds the operator's OCI image archive offline, with no Docker daemon and no
# registry: Debian's C libraries (mmdebstrap, cached), the pinned Node binary,
# the compiled app and its production node_modules (npm ci from the lockfile,
# cached by the lockfile's hash), packed by src/cluster/image/ into
# dist/image/nodewarden.tar. Reproducible: the same inputs give the same digest
# (every file and date carries SOURCE_DATE_EPOCH, by default the last commit's time).
#
# Usage: hack/build-image.sh [OUT]     OUT defaults to dist/image/nodewarden.tar
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"
OUT="${1:-dist/image/nodewarden.tar}"
CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}/image"
# What the Node binary links against (ldd), and virsh (libvirt-clients), which
# `nodewarden vm-host agent` drives the node's libvirtd with; nothing more: no
# shell, no package manager.
BASE_PACKAGES="libc6,libstdc++6,libgcc-s1,libvirt-clients"
SUITE=bookworm
log() { printf '[build-image] %s\n' "$*" >&2; }

for tool in mmdebstrap; do
  command -v "$tool" >/dev/null || { log "error: $tool is needed (hack/debian-packages.sh installs it)"; exit 1; }
done
NODE_BIN="$(NODEWARDEN_FORCE_PINNED_NODE=1 hack/node.sh)"
export PATH="$NODE_BIN:$PATH"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

BASE="$CACHE_ROOT/base-$SUITE-${BASE_PACKAGES//,/-}"
if [[ ! -d "$BASE" ]]; then
  log "base: mmdebstrap $SUITE $BASE_PACKAGES"
  rm -rf "$BASE.partial" && mkdir -p "$(dirname "$BASE")"
  mmdebstrap --quiet --variant=extract --include="$BASE_PACKAGES" "$SUITE" "$BASE.partial"
  mv "$BASE.partial" "$BASE"
fi

MODULES="$CACHE_ROOT/modules-$(sha256sum package-lock.json | cut -c1-12)"
if [[ ! -d "$MODULES/node_modules" ]]; then
  log "production node_modules: npm ci --omit=dev"
  rm -rf "$MODULES.partial" && mkdir -p "$MODULES.partial"
  cp package.json package-lock.json "$MODULES.partial/"
  (cd "$MODULES.partial" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
  mv "$MODULES.partial" "$MODULES"
fi

# Compiled apart from dist/, so nothing a stale dist/ holds gets into the image.
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
log "compile: tsc -p tsconfig.build.json"
npx tsc -p tsconfig.build.json --outDir "$STAGE/dist"
node src/cluster/image/main.ts --out "$OUT" --base "$BASE" --node "$NODE_BIN/node" \
  --dist "$STAGE/dist" --modules "$MODULES/node_modules" --packages "$BASE_PACKAGES"
