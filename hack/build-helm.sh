#!/usr/bin/env bash
# Builds Helm (v4, the Go module helm.sh/helm/v4) from the Go module proxy into
# a cache folder keyed by its pinned version, as the control plane is built:
# the chart is checked by the real Helm (lint, template, install, upgrade,
# uninstall) in make test. A warm cache returns at once.
#
# Usage: hack/build-helm.sh        prints the helm binary's path on the last line
# Env:   NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE_ROOT="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}"
BIN="$CACHE_ROOT/bin/helm-${HELM_VERSION}"
log() { printf '[build-helm] %s\n' "$*" >&2; }

if [[ -x "$BIN/helm" ]]; then
  echo "$BIN/helm"
  exit 0
fi
command -v go >/dev/null || { log "error: the Go toolchain is needed to build Helm (https://go.dev/doc/install)"; exit 1; }
START=$(date +%s)
log "building helm.sh/helm/v4/cmd/helm@$HELM_VERSION (about 5 to 10 minutes on 2 cores the first time)"
mkdir -p "$BIN.partial"
# helm's go.mod has no replace lines, so go install works; the version is stamped as Helm's own build does.
GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS= GOBIN="$BIN.partial" go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
[[ -x "$BIN.partial/helm" ]] || { log "error: helm was not built; see the output above"; exit 1; }
rm -rf "$BIN" && mv "$BIN.partial" "$BIN"
log "built in $(($(date +%s) - START))s: $BIN/helm"
echo "$BIN/helm"
