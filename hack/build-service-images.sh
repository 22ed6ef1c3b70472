#!/usr/bin/env bash
# Builds the tenant support services' OCI image archives offline, as
# hack/build-image.sh builds the operator's: Debian's packages extracted by
# mmdebstrap (cached per package list), our files on top, packed by
# src/cluster/image/ reproducibly (SOURCE_DATE_EPOCH, by default the last
# commit's time). Two archives:
#   nodewarden-jumphost.tar  sshd, the ssh client, redfishtool, python3 and the
#                            `host` helper: the jump host's default image
#   nodewarden-haproxy.tar   Debian's haproxy, for the load balancers where
#                            haproxy:<version> cannot be pulled (no registry)
# The last line printed is the folder holding them.
#
# Usage: hack/build-service-images.sh [OUTDIR]     OUTDIR defaults to dist/image
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"
OUTDIR="${1:-dist/image}"
CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}/image"
SUITE=bookworm
# bash: the users' shell and the entrypoint's; coreutils: what a user types first.
JUMPHOST_PACKAGES="openssh-server,openssh-client,redfishtool,python3,bash,coreutils"
HAPROXY_PACKAGES="haproxy"
log() { printf '[build-service-images] %s\n' "$*" >&2; }

command -v mmdebstrap >/dev/null || { log "error: mmdebstrap is needed (hack/debian-packages.sh installs it)"; exit 1; }
NODE_BIN="$(hack/node.sh)"
export PATH="$NODE_BIN:$PATH"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

# The Debian root file system for a package list, made once.
base() {
  local dir="$CACHE_ROOT/base-$SUITE-${1//,/-}"
  if [[ ! -d "$dir" ]]; then
    log "base: mmdebstrap $SUITE $1"
    rm -rf "$dir.partial" && mkdir -p "$(dirname "$dir")"
    mmdebstrap --quiet --variant=extract --include="$1" "$SUITE" "$dir.partial"
    mv "$dir.partial" "$dir"
  fi
  printf '%s\n' "$dir"
}

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
# The helper as the operator renders it into the jump host's ConfigMap: one text, two places.
node --input-type=module -e \
  "const m = await import('./src/tenant/services/jumphost-files.ts'); process.stdout.write(m.HOST_HELPER);" \
  >"$STAGE/host"

mkdir -p "$OUTDIR"
node src/cluster/image/main.ts --out "$OUTDIR/nodewarden-jumphost.tar" --service jumphost \
  --base "$(base "$JUMPHOST_PACKAGES")" --packages "$JUMPHOST_PACKAGES" --helper "$STAGE/host" >&2
node src/cluster/image/main.ts --out "$OUTDIR/nodewarden-haproxy.tar" --service haproxy \
  --base "$(base "$HAPROXY_PACKAGES")" --packages "$HAPROXY_PACKAGES" >&2
cd "$OUTDIR" && pwd
