#!/usr/bin/env bash
# Builds medik8s node-maintenance-operator (the peer bench/real-nodes.ts drains against) from
# the Go module proxy into a cache folder keyed by its version, with its CRDs beside it. The
# proxy here serves neither k8s.io/kubectl nor k8s.io/cli-runtime at NMO's pinned v0.34.7:
# when the release does not build as it is, both are replaced by v0.34.1 (PATCHED says so).
# A warm cache returns at once.
#
# Usage: hack/build-nmo.sh [VERSION]    prints the folder (nmo, crd/, PATCHED?) on the last line
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail

VERSION="${1:-v0.21.0}"
MODULE=github.com/medik8s/node-maintenance-operator
CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
OUT="$CACHE_ROOT/peers/nmo-$VERSION"
log() { printf '[build-nmo] %s\n' "$*" >&2; }

if [[ -x "$OUT/nmo" && -d "$OUT/crd" ]]; then
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null || { log "error: the Go toolchain is needed to build NMO"; exit 1; }
export GOTOOLCHAIN=local CGO_ENABLED=0
START=$(date +%s)
SRC="$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[[ -d $SRC ]] || { log "error: could not download $MODULE@$VERSION"; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -r "$SRC" "$WORK/src" && chmod -R u+w "$WORK/src"
rm -rf "$OUT.partial" && mkdir -p "$OUT.partial"
build() { (cd "$WORK/src" && go build -trimpath -ldflags "-X $MODULE/version.Version=$VERSION" -o "$OUT.partial/nmo" ./cmd); }
log "building $MODULE@$VERSION ./cmd (minutes on 2 cores)"
if ! build 2>"$WORK/build.log"; then
  log "as released it does not build here ($(grep -m1 -E '403|error' "$WORK/build.log" || true)); replacing kubectl and cli-runtime by v0.34.1"
  (cd "$WORK/src" && go mod edit -replace k8s.io/kubectl=k8s.io/kubectl@v0.34.1 \
    -replace k8s.io/cli-runtime=k8s.io/cli-runtime@v0.34.1)
  GOFLAGS=-mod=mod build
  echo "k8s.io/kubectl and k8s.io/cli-runtime replaced by v0.34.1" >"$OUT.partial/PATCHED"
fi
cp -r "$WORK/src/config/crd/bases" "$OUT.partial/crd"
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
log "built in $(($(date +%s) - START))s: $OUT"
echo "$OUT"
