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

say "2. A 12-node fleet in 3 zones (3 control-plane nodes, 9 workers), and 12 bare-metal machines in 6 racks behind simulated BMCs"
"$NW" cluster up --name "$NAME" --pools "cp=3:role=control-plane,type=nw.control-4,cpu=4,memory=16Gi;worker=9:type=nw.standard-8,racks=3" \
  --bare-metal-hosts 12:racks=6
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

say "4. The operator, out of cluster: CRDs installed, webhook registered at https://127.0.0.1:9443, nodes replaced through the cluster's simulated cloud"
KUBECONFIG="$KC" "$ROOT/hack/install-crds.sh" "$KUBECTL" install >/dev/null
LOG="$(mktemp -t nodewarden-operator.XXXXXX.log)"
"$NW" operator --kubeconfig "$KC" --leader-elect --leader-election-namespace default --cloud-provider simulated --baremetal-resync 10s \
  --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081 \
  --webhook-bind-address 127.0.0.1:9443 --webhook-url https://127.0.0.1:9443 >"$LOG" 2>&1 &
OPERATOR=$!
trap 'kill $OPERATOR 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:8081/readyz >/dev/null 2>&1 && break; sleep 0.2; done
echo "   operator running (pid $OPERATOR, logs in $LOG)"

say "5. A node into maintenance: worker-000 runs web pods under a PDB, a DaemonSet pod, an unmanaged pod and an emptyDir pod"
k -n shop get pods -o wide --field-selector spec.nodeName=worker-000
echo "   a maintenance for a node that does not exist is refused by the admission webhook:"
printf 'apiVersion: maintenance.nodewarden.dev/v1alpha1\nkind: NodeMaintenance\nmetadata: {name: typo}\nspec: {nodeName: no-such-node}\n' |
  k create -f - 2>&1 | sed 's/^/   /' || true
"$NW" maintenance start worker-000 --reason "kernel upgrade" --kubeconfig "$KC" --wait
k get nodemaintenances
k get node worker-000 -o custom-columns=NODE:.metadata.name,UNSCHEDULABLE:.spec.unschedulable,TAINTS:.spec.taints[*].key
k -n shop get pods -o wide --field-selector spec.nodeName=worker-000
k -n shop get pdb web

say "6. ...and out again: deleting the maintenance uncordons the node"
"$NW" maintenance stop worker-000 --kubeconfig "$KC" --wait
k get node worker-000 -o custom-columns=NODE:.metadata.name,UNSCHEDULABLE:.spec.unschedulable,TAINTS:.spec.taints[*].key

say "7. A rolling upgrade of all 12 nodes to a new image: 3 new nodes at a time, control plane first, drains under the PDB"
"$NW" cloud settings --cluster "$NAME" --boot-delay 2s
"$NW" cloud status --cluster "$NAME"
for _ in $(seq 1 50); do [ "$(k get scalinggroups -o name 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.2; done
k get scalinggroups
"$NW" upgrade start --image nwos-1.1.0 --image-version 1.1.0 --max-surge 3 --max-unavailable 3 --kubeconfig "$KC" --wait --timeout 600
"$NW" upgrade status --kubeconfig "$KC"
k get nodes -L nodewarden.dev/scaling-group -L nodewarden.dev/image
k -n shop get pdb web

say "8. Bare-metal hosts: the operator registered and inspected the 12 machines over Redfish (HTTPS, per-machine credentials)"
hosts_available() { [ "$(k get baremetalhosts -A -o jsonpath='{range .items[*]}{.status.provisioning.state}{"\n"}{end}' | grep -c '^available$')" -ge "$1" ]; }
for _ in $(seq 1 120); do hosts_available 12 && break; sleep 0.5; done
"$NW" baremetal hosts --kubeconfig "$KC"
"$NW" bmc machines --cluster "$NAME" --kind physical

say "9. A tenant cluster carved out of them: 3 control-plane hosts in 3 racks, 2 workers and a standby in the other racks, with its load balancers and jump host"
k create secret generic demo-node-ssh-keys --from-literal=id_ed25519=demo-key --dry-run=client -o yaml | k apply -f - >/dev/null
k apply -f "$ROOT/config/samples/baremetal_v1alpha1_tenantcluster.yaml"
for _ in $(seq 1 120); do [ "$(k get tenantcluster demo -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] && break; sleep 0.5; done
"$NW" tenant status demo --kubeconfig "$KC"
FAILED=$(k get baremetalhosts -n metal3 -l baremetal.nodewarden.dev/cluster-name=demo,baremetal.nodewarden.dev/role=Worker,baremetal.nodewarden.dev/standby=false -o jsonpath='{.items[0].metadata.name}')
echo "   $FAILED vanishes at its BMC; the standby takes over:"
"$NW" bmc faults --cluster "$NAME" --set "{\"vanished\": [\"$FAILED\"]}"
for _ in $(seq 1 120); do k get events -n default --field-selector reason=StandbyPromoted -o name | grep -q . && break; sleep 0.5; done
k get events -n default --field-selector involvedObject.name=demo -o custom-columns=REASON:.reason,MESSAGE:.message | grep -E 'REASON|HostFailed|StandbyPromoted|HostReleased'
"$NW" tenant status demo --kubeconfig "$KC"
"$NW" bmc faults --cluster "$NAME" --clear >/dev/null

say "10. VM hosts: a VirtualHostPool makes BareMetalHosts out of VMs on 2 hypervisor nodes (ViNO), addresses from its IPPool"
# The rollout replaced every node, so the hypervisors are two of today's workers.
HYPERVISORS=$(k get nodes -l '!node-role.kubernetes.io/control-plane' -o name | head -2)
k label $HYPERVISORS baremetal.nodewarden.dev/hypervisor=true --overwrite
k apply -f "$ROOT/config/samples/baremetal_v1alpha1_virtualhostpool.yaml"
for _ in $(seq 1 120); do hosts_available 18 && break; sleep 0.5; done
k get virtualhostpools,ippools -A
"$NW" baremetal hosts --kubeconfig "$KC" -n default
echo "   power switched off at a BMC behind the operator's back is noticed and switched back on:"
"$NW" bmc power --cluster "$NAME" bm-r0-00 off
for _ in $(seq 1 160); do [ "$("$NW" bmc machines --cluster "$NAME" bm-r0-00 -o json | grep -c '"power": "On"')" = 1 ] && break; sleep 0.5; done
k get events -n metal3 --field-selector reason=PowerDrift -o custom-columns=HOST:.involvedObject.name,REASON:.reason,MESSAGE:.message | tail -2

say "11. A workload cluster in VMs: a KVMCluster of 1 master + 2 workers, each a VM in a pod here; the first master brings up the cluster's own control plane"
"$NW" hypervisor settings --cluster "$NAME" --boot-delay 1s >/dev/null
k apply -f "$ROOT/config/samples/kvm_v1alpha1_kvmcluster.yaml"
kvm_ready() { [ "$(k get kvmcluster c1 -o jsonpath='{.status.conditions[?(@.type=="Updated")].status}/{.status.readyNodes}/{.spec.release.version}')" = "True/3/$1" ]; }
for _ in $(seq 1 240); do kvm_ready 20.1.0 && break; sleep 0.5; done
k get kvmclusters
k -n c1 get deployments,pods,services -o wide
WKC="$(mktemp -t c1-kubeconfig.XXXXXX)"
k get secret c1-kubeconfig -o jsonpath='{.data.kubeconfig}' | base64 -d >"$WKC"
echo "   the workload cluster's nodes, through its own kubeconfig (each named as its VM pod):"
"$KUBECTL" --kubeconfig "$WKC" get nodes -o wide | sed 's/^/   /'
echo "   a release upgrade: one node at a time, master first, each drained before its VM goes:"
k patch kvmcluster c1 --type merge -p '{"spec":{"release":{"version":"20.2.0","kubernetesVersion":"v1.37.2","osVersion":"4230.2.1"}}}'
for _ in $(seq 1 480); do kvm_ready 20.2.0 && break; sleep 0.5; done
"$NW" kvm status c1 --kubeconfig "$KC"
"$KUBECTL" --kubeconfig "$WKC" get nodes | sed 's/^/   /'
k get events --field-selector involvedObject.kind=KVMCluster --sort-by=.metadata.creationTimestamp -o custom-columns=REASON:.reason,MESSAGE:.message | tail -8

kill $OPERATOR; wait $OPERATOR 2>/dev/null || true
trap - EXIT

say "Done. The cluster keeps running:"
cat <<MSG
   kubectl --kubeconfig $KC get nodes
   $NW cluster status --name $NAME
   $NW cluster down --name $NAME      # stop, keep data; 'up' resumes it
   $NW cluster delete --name $NAME    # remove it
   $NW operator --kubeconfig $KC --webhook-url https://127.0.0.1:9443 --cloud-provider simulated   # run the operator again
   $NW upgrade start --image nwos-1.2.0 --kubeconfig $KC --wait   # and roll the fleet again
MSG
