#!/usr/bin/env bash
# Builds the controller-runtime anchor for bench/cache.ts and prints the binary's path.
# The binary lives outside the repo, in the nodewarden cache; it is rebuilt only
# when a source file here is newer than it.
# Env: NODEWARDEN_CACHE  cache root (default $XDG_CACHE_HOME/nodewarden or ~/.cache/nodewarden)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${NODEWARDEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nodewarden}/anchor/cache-anchor"
fresh=1
if [[ -x "$out" ]]; then
  for f in "$here"/*.go "$here"/go.mod "$here"/go.sum "$here"/build.sh; do
    [[ -e "$f" && "$f" -nt "$out" ]] && fresh=0
  done
else
  fresh=0
fi
if [[ $fresh == 0 ]]; then
  mkdir -p "$(dirname "$out")"
  cd "$here"
  echo "building the controller-runtime anchor (the first build takes a few minutes on 2 cores)…" >&2
  GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod tidy >&2
  GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$out.tmp" . >&2
  mv "$out.tmp" "$out"
fi
echo "$out"
