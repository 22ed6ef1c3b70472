#!/usr/bin/env bash
# Builds what a real node runs beside kubelet and kube-proxy (those come from
# hack/build-controlplane.sh): containerd, ctr and containerd-shim-runc-v2 from
# the Go module proxy, into a cache folder keyed by the pinned versions and the
# wrapper modules under hack/noderuntime/. A warm cache returns at once.
#
# Usage: hack/build-node-runtime.sh        prints the folder on the last line
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
# Everything the outputs are made from besides the pins: a changed input is a new folder.
KEY_INPUTS=("$HERE"/noderuntime/containerd/go.sum)
KEY="$(cat "${KEY_INPUTS[@]}" | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/node-runtime/containerd-${CONTAINERD_VERSION}_${KEY}"
BINARIES=(containerd ctr containerd-shim-runc-v2)

log() { printf '[build-node-runtime] %s\n' "$*" >&2; }

have_all() {
  for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done
}

if have_all; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { log "error: the Go toolchain is needed to build the node runtime (https://go.dev/doc/install)"; exit 1; }
# Never let a module's toolchain line trigger a toolchain download.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
rm -rf "$OUT.partial" && mkdir -p "$OUT.partial"
START=$(date +%s)
GO_OUT="$OUT.partial"
# shellcheck source=go-build.sh
source "$HERE/go-build.sh"

# --- containerd: static, no btrfs snapshotter (no headers needed); the wrapper
# module must require the pinned version, or the stamp would lie.
CTRD="$HERE/noderuntime/containerd"
got="$(cd "$CTRD" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)"
[[ "$got" == "$CONTAINERD_VERSION" ]] || { log "error: $CTRD/go.mod requires containerd $got, versions.env pins $CONTAINERD_VERSION"; exit 1; }
CTRD_TAGS="urfave_cli_no_docs osusergo netgo static_build no_btrfs"
CTRD_LDF="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
EXTRA_ARGS=(-tags "$CTRD_TAGS" -ldflags "$CTRD_LDF")
run_build containerd "$CTRD" github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
# The shim, one per pod, needs no gRPC server: no_grpc makes it smaller.
EXTRA_ARGS=(-tags "$CTRD_TAGS no_grpc" -ldflags "$CTRD_LDF")
run_build containerd-shim "$CTRD" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

for b in "${BINARIES[@]}"; do
  [[ -x "$OUT.partial/$b" ]] || { log "error: $b was not built; see the output above"; exit 1; }
done
echo "$(($(date +%s) - START))" > "$OUT.partial/build-seconds"
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
log "built in $(($(date +%s) - START))s: $OUT"
echo "$OUT"
