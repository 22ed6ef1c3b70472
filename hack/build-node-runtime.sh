#!/usr/bin/env bash
# Builds what a real node runs beside kubelet and kube-proxy (those come from
# hack/build-controlplane.sh), into a cache folder keyed by the pinned versions
# and the inputs under hack/noderuntime/. A warm cache returns at once.
#   containerd, ctr, containerd-shim-runc-v2   Go module proxy (noderuntime/containerd)
#   coredns                                    Go module proxy (noderuntime/coredns), cluster DNS
#   pause                                      gcc -static of the Kubernetes module's pause.c:
#                                              the sandbox image and each node's namespace holder
#   testapp                                    our own (noderuntime/testapp), the tests' workload
#   images/{pause,coredns,testapp}.tar         OCI archives of those three, packed by
#                                              src/cluster/image/ (ctr images import takes their names)
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
APP_VERSION="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json")"
KEY_INPUTS=("$HERE"/noderuntime/{containerd,coredns}/go.sum "$HERE"/noderuntime/testapp/{go.mod,*.go}
  "$ROOT"/src/cluster/image/{main,oci,tar,tree,static-image}.ts)
KEY="$( (cat "${KEY_INPUTS[@]}"; echo "$APP_VERSION") | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/node-runtime/containerd-${CONTAINERD_VERSION}_coredns-${COREDNS_VERSION}_pause-${PAUSE_VERSION}_${KEY}"
BINARIES=(containerd ctr containerd-shim-runc-v2 coredns pause testapp)

log() { printf '[build-node-runtime] %s\n' "$*" >&2; }

IMAGES=(pause coredns testapp)
have_all() {
  for b in "${BINARIES[@]}"; do [[ -x "$OUT/$b" ]] || return 1; done
  for i in "${IMAGES[@]}"; do [[ -f "$OUT/images/$i.tar" ]] || return 1; done
}

if have_all; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

# shellcheck source=build-lock.sh
source "$HERE/build-lock.sh"
take_build_lock "$OUT"
if have_all; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { log "error: the Go toolchain is needed to build the node runtime (https://go.dev/doc/install)"; exit 1; }
command -v gcc >/dev/null || { log "error: gcc (and libc6-dev's static libc) is needed to build pause (hack/debian-packages.sh installs them)"; exit 1; }
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

# --- CoreDNS: the wrapper's main picks the plugins; the version is CoreDNS's own constant.
DNS="$HERE/noderuntime/coredns"
got="$(cd "$DNS" && go list -m -f '{{.Version}}' github.com/coredns/coredns)"
[[ "$got" == "$COREDNS_VERSION" ]] || { log "error: $DNS/go.mod requires CoreDNS $got, versions.env pins $COREDNS_VERSION"; exit 1; }
EXTRA_ARGS=(-ldflags "-s -w")
run_build coredns "$DNS" nodewarden.dev/hack/noderuntime/coredns

# --- pause: C, from the same Kubernetes module as kubelet; static, so the image is one file.
KUBE_DIR="$(cd "$HERE/controlplane/kube" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
log "pause: gcc -static $KUBE_DIR/build/pause/linux/pause.c"
gcc -Os -static -DVERSION="$PAUSE_VERSION" -o "$OUT.partial/pause" "$KUBE_DIR/build/pause/linux/pause.c"

# --- testapp: ours, standard library only.
EXTRA_ARGS=(-ldflags "-s -w")
run_build testapp "$HERE/noderuntime/testapp" nodewarden.dev/hack/noderuntime/testapp

for b in "${BINARIES[@]}"; do
  [[ -x "$OUT.partial/$b" ]] || { log "error: $b was not built; see the output above"; exit 1; }
done

# --- Images: each binary alone, under the name kubelet and pods ask for. A fixed
# date, so the same binaries give the same digests.
NODE_DIR="$("$HERE/node.sh")"
pack() { # binary name [user]
  log "image: $2"
  SOURCE_DATE_EPOCH=0 "$NODE_DIR/node" "$ROOT/src/cluster/image/main.ts" --out "$OUT.partial/images/$1.tar" \
    --static "$OUT.partial/$1" --name "$2" ${3:+--user "$3"} >&2
}
pack pause "registry.k8s.io/pause:$PAUSE_VERSION" 65535
pack coredns "localhost/coredns:$COREDNS_VERSION"
pack testapp "localhost/nodewarden-testapp:$APP_VERSION"
echo "$(($(date +%s) - START))" > "$OUT.partial/build-seconds"
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
log "built in $(($(date +%s) - START))s: $OUT"
echo "$OUT"
