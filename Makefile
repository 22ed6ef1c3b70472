# nodewarden — kubebuilder-style targets. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Node >= 22.19: the machine's, or the pinned Node 24 fetched from the npm registry.
NODE_DIR = $(shell hack/node.sh)
WITH_NODE = PATH="$(NODE_DIR):$$PATH"
# From source (Node 24 strips types), so a stale dist/ never answers for the tree.
NW = NODEWARDEN_FROM_SOURCE=1 ./bin/nodewarden
NODES ?= 3
NAME ?= nodewarden

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development
# npm ci installs exactly what package-lock.json says and never rewrites it (npm
# install would, on a machine whose platform packages the lockfile lacks).
node_modules/.installed: package-lock.json
	$(WITH_NODE) npm ci --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: deps
deps: node_modules/.installed ## Install Node (if the machine's is too old) and the npm dependencies of package-lock.json.

.PHONY: debian-packages
debian-packages: ## Install the Debian packages the tests and the image use (redfishtool, python3-sushy, haproxy, ssh-keygen, ignition-validate, mmdebstrap, umoci, skopeo, runc, CNI plugins, iptables, conntrack, gcc, libvirt and QEMU, busybox, isolinux, genisoimage); needs root or sudo once.
	hack/debian-packages.sh

.PHONY: build
build: deps ## Compile TypeScript to dist/ (the nodewarden CLI and operator).
	$(WITH_NODE) npx tsc -p tsconfig.build.json

.PHONY: lint
lint: deps ## Lint, check formatting (biome) and the one-way imports between folders (.dependency-cruiser.cjs).
	$(WITH_NODE) npx biome check .
	$(WITH_NODE) npx depcruise src --config .dependency-cruiser.cjs --output-type err

.PHONY: fmt
fmt: deps ## Format and apply safe lint fixes.
	$(WITH_NODE) npx biome check --write .

.PHONY: typecheck
typecheck: deps ## Type-check everything (tsc --noEmit, strict).
	$(WITH_NODE) npx tsc -p tsconfig.json --noEmit

.PHONY: controlplane
controlplane: ## Build (or find cached) kube-apiserver, controller-manager, scheduler, kubectl, kubelet, kube-proxy, etcd, kwok.
	hack/build-controlplane.sh

.PHONY: node-runtime
node-runtime: debian-packages ## Build (or find cached) what a real node runs besides kubelet: containerd, ctr, the runc shim, CoreDNS, pause, the test app.
	hack/build-node-runtime.sh

.PHONY: image
image: deps debian-packages ## Build the operator's OCI image archive offline (no Docker, no registry) into dist/image/nodewarden.tar.
	$(WITH_NODE) hack/build-image.sh

.PHONY: vm-os-image
vm-os-image: debian-packages controlplane node-runtime ## Build (or find cached) the Debian OS image KVMCluster VMs boot: kernel, initramfs, root.qcow2 (mmdebstrap, kubelet, containerd, Ignition on first boot).
	hack/build-vm-os-image.sh

.PHONY: vm-image
vm-image: deps debian-packages vm-os-image ## Build the VM image every KVMCluster VM pod runs (QEMU, the OS image, the entrypoint) offline into dist/image/nodewarden-vm.tar.
	$(WITH_NODE) hack/build-vm-image.sh

.PHONY: service-images
service-images: deps debian-packages ## Build the tenant services' images offline (jump host: sshd, redfishtool, `host`; Debian's haproxy) into dist/image/.
	$(WITH_NODE) hack/build-service-images.sh

##@ Manifests and deployment
.PHONY: manifests
manifests: deps ## Generate CRDs, RBAC and the webhook configuration into config/ and charts/ from src/capabilities.ts.
	$(WITH_NODE) $(NW) manifests

.PHONY: manifests-check
manifests-check: deps ## Fail if generated manifests are stale.
	$(WITH_NODE) $(NW) manifests --check

.PHONY: install
install: controlplane ## Install the CRDs into the cluster of the current kubeconfig (an existing metal3 CRD is left alone).
	hack/install-crds.sh $$(hack/build-controlplane.sh)/kubectl install

.PHONY: uninstall
uninstall: controlplane ## Remove nodewarden's CRDs (and every custom resource of them) from the cluster.
	hack/install-crds.sh $$(hack/build-controlplane.sh)/kubectl uninstall

.PHONY: deploy
deploy: controlplane ## Deploy the operator with kustomize (config/default) to the current cluster.
	$$(hack/build-controlplane.sh)/kubectl apply -k config/default
	hack/install-crds.sh $$(hack/build-controlplane.sh)/kubectl ecosystem

.PHONY: undeploy
undeploy: controlplane ## Remove the operator deployed by make deploy.
	$$(hack/build-controlplane.sh)/kubectl delete -k config/default --ignore-not-found

.PHONY: run
run: deps install ## Run the operator from source against the current kubeconfig (probes and metrics on loopback).
	$(WITH_NODE) $(NW) operator --metrics-bind-address 127.0.0.1:8080 --health-probe-bind-address 127.0.0.1:8081 $(ARGS)

##@ Test
# Everything a fresh machine needs is provisioned by the steps themselves; the
# wrapper fails the run if any step changed a file git tracks.
.PHONY: test
test: ## Lint, type-check, unit and integration tests (real control plane); fails if a step changed a tracked file.
	@hack/tracked-files-unchanged.sh $(MAKE) --no-print-directory lint typecheck manifests-check test-unit test-integration

.PHONY: test-unit
test-unit: deps debian-packages ## Unit tests (no cluster).
	$(WITH_NODE) node --test --test-reporter=spec 'test/unit/**/*.test.ts'

.PHONY: test-integration
# The digest (each failed test's first error lines) is printed last: CI keeps only a run's tail.
test-integration: deps debian-packages controlplane node-runtime helm clusterapi ## Integration tests against a real local cluster started for the run.
	@digest=$$(mktemp); $(WITH_NODE) timeout --signal=INT 2400 node --test --test-concurrency=1 --test-timeout=300000 --test-global-setup=test/harness/global-setup.ts --test-reporter=spec --test-reporter-destination=stdout --test-reporter=./test/harness/failure-digest.ts --test-reporter-destination=$$digest 'test/integration/**/*.test.ts'; rc=$$?; cat $$digest; rm -f $$digest; exit $$rc

# Its own target: a cold OS and VM image build and guests booted under TCG take minutes.
.PHONY: test-vm
test-vm: deps debian-packages controlplane node-runtime ## The VM image run as a worker's and a master's pod container (runc): the guest applies its Ignition, /healthz, preStop powers it off; the master's control plane comes up and it is a Ready node. Then a KVMCluster of a master and a worker made by the operator (Helm, on real nodes of a local cluster): both Ready nodes through the master Service.
	$(WITH_NODE) timeout --signal=INT 3600 node --test --test-concurrency=1 --test-timeout=1800000 --test-reporter=spec test/vm/*.test.ts

.PHONY: clusterapi
clusterapi: ## Build (or find cached) the Cluster API core manager v1.14 and its CRDs from the Go module proxy (the clusterapi provider's tests run it).
	hack/build-clusterapi.sh

.PHONY: helm
helm: ## Build Helm (v4) from the Go module proxy into the cache (the chart's tests use it).
	@hack/build-helm.sh >/dev/null

.PHONY: bench
bench: deps controlplane ## Benchmarks: cluster up to N Ready nodes and memory; cache sync/latency at 1000 nodes + 30000 pods.
	$(WITH_NODE) node bench/cluster-up.ts
	$(WITH_NODE) node --expose-gc bench/cache.ts
	$(WITH_NODE) node bench/maintenance.ts
	$(WITH_NODE) node bench/upgrade.ts
	$(WITH_NODE) node bench/baremetal.ts
	$(WITH_NODE) node bench/kvm.ts
	$(MAKE) bench-footprint
	$(MAKE) bench-real-nodes

.PHONY: bench-upgrade
bench-upgrade: deps controlplane clusterapi ## Benchmark: rolling upgrade of 100 nodes (boot delay 5 s) at surge 1 and 10, and through Cluster API at surge 10.
	$(WITH_NODE) node bench/upgrade.ts

.PHONY: bench-baremetal
bench-baremetal: deps controlplane ## Benchmark: 500 bare-metal hosts available over Redfish; a 20 x 8 VirtualHostPool.
	$(WITH_NODE) node bench/baremetal.ts

.PHONY: bench-vmhosts-libvirt
bench-vmhosts-libvirt: deps controlplane ## Benchmark: a VirtualHostPool of 1 node x 10 VMs, simulated and on real libvirt (root).
	$(WITH_NODE) node bench/vmhosts-libvirt.ts

.PHONY: bench-tenant
bench-tenant: deps controlplane ## Benchmark: 50 TenantClusters (3+5+1) at once on 1,000 hosts in 40 racks; replacing a failed host.
	$(WITH_NODE) node bench/tenant.ts

.PHONY: bench-kvm
bench-kvm: deps controlplane ## Benchmark: 5 KVMClusters of 1+3 at once (time to Created, memory); an upgrade of 1+10 at 5 s VM boot.
	$(WITH_NODE) node bench/kvm.ts

.PHONY: bench-footprint
bench-footprint: deps controlplane build ## Footprint: CLI wall/RSS vs kubectl, simulator daemons' RSS, operator RSS vs medik8s NMO (../shared/peers/nmo/run.sh).
	$(WITH_NODE) node bench/footprint.ts

.PHONY: bench-real-nodes
bench-real-nodes: deps debian-packages controlplane node-runtime helm ## Benchmark: real nodes Ready after up (cold, warm), their memory and the operator pod's, a 30-pod real drain vs kubectl drain and medik8s NMO, the image.
	$(WITH_NODE) node bench/real-nodes.ts

.PHONY: bench-maintenance
bench-maintenance: deps controlplane ## Benchmark: a 110-pod drain against kubectl drain; 100 maintenances at once on 1000 nodes.
	$(WITH_NODE) node bench/maintenance.ts

.PHONY: soak
soak: deps controlplane ## Fault soak: make soak SEED=42 DURATION=300 [SOAK_NODES=200]; seeded faults, invariants sampled throughout, a report.
	$(WITH_NODE) node test/soak/run.ts --seed $(or $(SEED),$(shell date +%s)) --duration $(or $(DURATION),300) --nodes $(or $(SOAK_NODES),200)

##@ Local cluster
.PHONY: cluster-up
cluster-up: deps ## Start a local cluster: make cluster-up NODES=100 [NAME=...].
	$(WITH_NODE) $(NW) cluster up --name $(NAME) --nodes $(NODES)

.PHONY: cluster-down
cluster-down: deps ## Stop the local cluster, keeping its data.
	$(WITH_NODE) $(NW) cluster down --name $(NAME)

.PHONY: demo
demo: deps build ## The tour: build the control plane, start a 12-node fleet in 3 zones, run workloads, show it.
	$(WITH_NODE) hack/demo.sh
