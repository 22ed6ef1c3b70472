#!/usr/bin/env bash
# Builds the real control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok, kwokctl) and a real node's kubelet and
# kube-proxy (same module, same version) from the Go module proxy only,
# into a cache folder keyed by the pinned versions. A warm cache returns at once.
#
# Usage: hack/build-controlplane.sh        prints the bin folder on the last line
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
# The wrapper modules' go.sum is part of the key: a changed dependency graph is a new build.
SUM_KEY="$(cat "$HERE/controlplane/kube/go.sum" "$HERE/controlplane/etcd/go.sum" | sha256sum | cut -c1-12)"
BIN="$CACHE_ROOT/bin/kube-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${SUM_KEY}"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd kwok kwokctl)

log() { printf '[build-controlplane] %s\n' "$*" >&2; }

have_all() {
  for b in "${BINARIES[@]}"; do [[ -x "$BIN/$b" ]] || return 1; done
}

if have_all; then
  log "cached: $BIN"
  echo "$BIN"
  exit 0
fi

# shellcheck source=build-lock.sh
source "$HERE/build-lock.sh"
take_build_lock "$BIN"
if have_all; then
  log "cached: $BIN"
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { log "error: the Go toolchain is needed to build the control plane (https://go.dev/doc/install)"; exit 1; }
# Never let a module's toolchain line trigger a toolchain download.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$BIN.partial"
START=$(date +%s)

GO_OUT="$BIN.partial"
# shellcheck source=go-build.sh
source "$HERE/go-build.sh"

# --- Kubernetes: stamped so the binaries report the real version (kwokctl reads it).
KUBE_COMMIT="$(cd "$HERE/controlplane/kube" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p' | head -1)"
KUBE_DATE="$(cd "$HERE/controlplane/kube" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Time": "\([^"]*\)".*/\1/p' | head -1)"
MAJOR="${KUBE_VERSION#v}"; MAJOR="${MAJOR%%.*}"
MINOR="${KUBE_VERSION#v*.}"; MINOR="${MINOR%%.*}"
LDF="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$MAJOR -X $pkg.gitMinor=$MINOR"
  LDF+=" -X $pkg.gitCommit=${KUBE_COMMIT:-unknown} -X $pkg.gitTreeState=clean -X $pkg.buildDate=${KUBE_DATE:-1970-01-01T00:00:00Z}"
done
EXTRA_ARGS=(-tags selinux,notest -ldflags "$LDF")
run_build kubernetes "$HERE/controlplane/kube" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy

# --- etcd: the module's own version constant is already right.
EXTRA_ARGS=(-ldflags "-s -w")
run_build etcd "$HERE/controlplane/etcd" nodewarden.dev/hack/controlplane/etcd

# --- kwok and kwokctl: their go.mod has no replace lines, so go install works.
log "kwok: installing sigs.k8s.io/kwok/cmd/{kwok,kwokctl}@$KWOK_VERSION"
GOBIN="$BIN.partial" GOFLAGS= go install -trimpath -ldflags "-s -w" \
  "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"

for b in "${BINARIES[@]}"; do
  [[ -x "$BIN.partial/$b" ]] || { log "error: $b was not built; see the output above"; exit 1; }
done
echo "$(($(date +%s) - START))" > "$BIN.partial/build-seconds"
rm -rf "$BIN" && mv "$BIN.partial" "$BIN"
log "built in $(($(date +%s) - START))s: $BIN"
echo "$BIN"
