#!/usr/bin/env bash
# make install / uninstall / deploy: our CRDs (config/crd) are applied and
# deleted as a whole; the ecosystem's (config/crd/ecosystem: metal3's
# BareMetalHost) only where the cluster has none of its own. A CRD already
# there without our label (app.kubernetes.io/part-of=nodewarden) belongs to
# another project, a real metal3 installation say: it is never overwritten,
# and never deleted by uninstall.
#   hack/install-crds.sh KUBECTL install|uninstall|ecosystem
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
K=$1
ACTION=$2
ECO=config/crd/ecosystem

# The owner label of CRD $1 in the cluster: "absent" when there is no such CRD.
owner() {
  local out
  if out=$("$K" get crd "$1" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/part-of}' 2>&1); then
    echo "${out:-unlabelled}"
  elif grep -q NotFound <<<"$out"; then
    echo absent
  else
    echo "$out" >&2
    exit 1
  fi
}

ecosystem() {
  [ -d "$ECO" ] || return 0
  for f in "$ECO"/*.yaml; do
    [ "$(basename "$f")" = kustomization.yaml ] && continue
    name=$(awk '/^  name:/ {print $2; exit}' "$f")
    case "$ACTION:$(owner "$name")" in
      uninstall:nodewarden) "$K" delete -f "$f" ;;
      uninstall:*) echo "uninstall: CRD $name is not nodewarden's: left in place" ;;
      *:absent | *:nodewarden) "$K" apply --server-side --force-conflicts -f "$f" ;;
      *) echo "install: CRD $name is installed by another project (metal3?): left as it is, nodewarden uses it" ;;
    esac
  done
}

# grep reads it all: with -q it stops at the first match, kubectl dies of SIGPIPE on a
# long output and pipefail made "no CRDs" of it, installing none.
has_crds() { "$K" kustomize config/crd | grep '^kind:' >/dev/null; }

case "$ACTION" in
  install) if has_crds; then "$K" apply --server-side --force-conflicts -k config/crd; fi; ecosystem ;;
  uninstall) if has_crds; then "$K" delete -k config/crd --ignore-not-found; fi; ecosystem ;;
  ecosystem) ecosystem ;;
  *) echo "usage: $0 KUBECTL install|uninstall|ecosystem" >&2; exit 2 ;;
esac
