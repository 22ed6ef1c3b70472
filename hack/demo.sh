#!/usr/bin/env bash
# make demo: a realistic small fleet on a real local control plane.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NW="$ROOT/bin/nodewarden"
NAME="${NAME:-demo}"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. The control plane: kube-apiserver, controller-manager, scheduler, kubectl, etcd and kwok, built from the Go module proxy (cached after the first time)"
BIN="$("$ROOT/hack/build-controlplane.sh")"
KUBECTL="$BIN/kubectl"

say "2. A 12-node fleet in 3 zones: 3 control-plane nodes and 9 workers"
"$NW" cluster up --name "$NAME" --pools "cp=3:role=control-plane,type=nw.control-4,cpu=4,memory=16Gi;worker=9:type=nw.standard-8,racks=3"
KC="$("$NW" cluster kubeconfig --name "$NAME")"
k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }
k version 2>/dev/null | sed 's/^/   /'
k get nodes -L topology.kubernetes.io/zone -L node.kubernetes.io/instance-type -L topology.nodewarden.dev/rack

say "3. Workloads: a zone-spread Deployment with a PodDisruptionBudget, and a DaemonSet on every node"
k apply -f "$ROOT/hack/demo/workloads.yaml"
k -n shop rollout status deployment/web --timeout=60s
k -n shop rollout status daemonset/node-agent --timeout=60s
k -n shop get pods -o wide
k -n shop get pdb web

say "Done. The cluster keeps running:"
cat <<MSG
   kubectl --kubeconfig $KC get nodes
   $NW cluster status --name $NAME
   $NW cluster down --name $NAME      # stop, keep data; 'up' resumes it
   $NW cluster delete --name $NAME    # remove it
MSG
