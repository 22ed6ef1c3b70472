#!/usr/bin/env bash
# Builds the real Cluster API core manager from the Go module proxy only, and
# copies beside it the manifests it ships (CRDs, webhook configuration), into a
# cache folder keyed by the pinned version and the wrapper's go.sum. A warm cache
# returns at once.
#
# Usage: hack/build-clusterapi.sh        prints the folder on the last line
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
# Layout of the folder: capi-manager, crd/*.yaml, webhook/manifests.yaml, build-seconds,
# patched-main.go.txt (the manager's main as built, see the patch below)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
# The wrapper module's go.sum and this script (which patches the manager) are the key:
# a changed dependency graph or patch is a new build.
SUM_KEY="$(cat "$HERE/clusterapi/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)"
OUT="$CACHE_ROOT/clusterapi/capi-${CLUSTER_API_VERSION}_${SUM_KEY}"

log() { printf '[build-clusterapi] %s\n' "$*" >&2; }

if [[ -x "$OUT/capi-manager" && -d "$OUT/crd" && -f "$OUT/webhook/manifests.yaml" ]]; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { log "error: the Go toolchain is needed to build Cluster API (https://go.dev/doc/install)"; exit 1; }
# Never let a module's toolchain line trigger a toolchain download.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
rm -rf "$OUT.partial" && mkdir -p "$OUT.partial/crd" "$OUT.partial/webhook"
START=$(date +%s)
cd "$HERE/clusterapi"

# The manifests come from the module's own folder, so they match the binary.
DIR="$(go mod download -json "sigs.k8s.io/cluster-api@$CLUSTER_API_VERSION" | sed -n 's/.*"Dir": "\([^"]*\)".*/\1/p' | head -1)"
[[ -d "$DIR/core/config/crd/bases" ]] || { log "error: no CRDs under $DIR/core/config/crd/bases"; exit 1; }
cp "$DIR"/core/config/crd/bases/*.yaml "$OUT.partial/crd/"
cp "$DIR/core/config/webhook/manifests.yaml" "$OUT.partial/webhook/manifests.yaml"

# One patch: the manager's webhook server listens on every interface, with no flag
# to say otherwise; CAPI_WEBHOOK_HOST sets its listen address, so tests keep it on
# loopback. go build -overlay may not replace files in the module cache and main.go
# imports the module's internal packages, so a copy of the module with the patched
# main.go stands in for it (a replace line in a copy of this wrapper).
SRC="$OUT.partial/src"
mkdir -p "$SRC/wrapper"
cp -r "$DIR" "$SRC/cluster-api" && chmod -R u+w "$SRC/cluster-api"
rm -rf "$SRC/cluster-api/docs"
MAIN="$SRC/cluster-api/core/main.go"
sed -i 's/^\(\t*\)Port:     webhookPort,$/\1Host:     os.Getenv("CAPI_WEBHOOK_HOST"),\n\1Port:     webhookPort,/' "$MAIN"
grep -q 'os.Getenv("CAPI_WEBHOOK_HOST")' "$MAIN" || { log "error: core/main.go no longer has the line the webhook-host patch changes"; exit 1; }
cp "$HERE"/clusterapi/{go.mod,go.sum,tools.go} "$SRC/wrapper/"
cd "$SRC/wrapper"
go mod edit -replace "sigs.k8s.io/cluster-api=../cluster-api"

# Stamped so the manager reports the real version.
LDF="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$CLUSTER_API_VERSION"
LDF+=" -X sigs.k8s.io/cluster-api/version.gitTreeState=clean"
TOTAL=$(go list -deps sigs.k8s.io/cluster-api/core | wc -l)
log "building sigs.k8s.io/cluster-api/core@$CLUSTER_API_VERSION ($TOTAL packages in the graph; ones in Go's build cache are skipped)"
# The manager is the module's core/ main package; go build names the output after it.
if ! go build -trimpath -ldflags "$LDF" -o "$OUT.partial/capi-manager" sigs.k8s.io/cluster-api/core; then
  log "error: building the Cluster API manager failed; see the compiler output above"
  exit 1
fi
cp "$MAIN" "$OUT.partial/patched-main.go.txt" && cd "$HERE" && rm -rf "$SRC"
echo "$(($(date +%s) - START))" >"$OUT.partial/build-seconds"
rm -rf "$OUT" && mv "$OUT.partial" "$OUT"
log "built in $(($(date +%s) - START))s: $OUT"
echo "$OUT"
