// The one-way rules between folders (make lint). Arrows point down:
//   src/runtime/   the controller runtime: imports nothing of ours above it
//   src/api/       CRD definitions: runtime only
//   src/cli/       the shared command-line kit (flags, progress): runtime and api
//   src/drain/     the drain library (kubectl drain's filters and evictions): runtime and api;
//                  maintenance drains the operator's cluster with it, kvm a workload cluster
//   src/redfish/   the Redfish service a BMC serves, over a backend seam: runtime only; the
//                  simulated BMC fleet and bare metal's VM host agent both serve through it
//   src/qemu/      QEMU on this machine (the KVM-or-TCG probe, a tiny initramfs): runtime
//                  only; the VM hosts' libvirt domains and the KVM capability's VM image use it
//   src/cluster/   local clusters and their simulators: never a capability
//   src/capability.ts   the contract, types only
//   src/<capability>/   maintenance, upgrade, …: the layers above, a simulator's
//                  public face, and another capability only through src/api/
//   src/capabilities.ts, src/cmd/, src/operator/, src/manifests/   composition
// A folder not named as a floor below is a capability, so a new one is held
// to these rules without editing this file.
const FLOORS = '^src/(runtime|api|cli|drain|redfish|qemu|cluster|cmd|operator|manifests)/';
const ROOT_FILES = '^src/[^/]+[.]ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles make the order of initialisation, and the design, hard to follow.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'runtime-is-the-floor',
      severity: 'error',
      comment: 'The runtime imports nothing of ours but itself: no capability, no cluster, no CLI.',
      from: { path: '^src/runtime/' },
      to: { path: '^src/', pathNot: '^src/runtime/' },
    },
    {
      name: 'api-on-runtime-only',
      severity: 'error',
      comment: 'CRD definitions depend on the runtime alone, so every capability may import them.',
      from: { path: '^src/api/' },
      to: { path: '^src/', pathNot: '^src/(runtime|api)/' },
    },
    {
      name: 'drain-library-below-capabilities',
      severity: 'error',
      comment: 'The drain library is shared by capabilities (like kubectl/pkg/drain); it imports none of them.',
      from: { path: '^src/drain/' },
      to: { path: '^src/', pathNot: '^src/(runtime|api|drain)/' },
    },
    {
      name: 'redfish-service-below-capabilities',
      severity: 'error',
      comment: 'The Redfish service is served by a simulator and by a capability; it imports neither.',
      from: { path: '^src/redfish/' },
      to: { path: '^src/', pathNot: '^src/(runtime|redfish)/' },
    },
    {
      name: 'qemu-below-capabilities',
      comment: 'The QEMU probe is shared by capabilities; it imports none of them.',
      severity: 'error',
      from: { path: '^src/qemu/' },
      to: { path: '^src/', pathNot: '^src/(runtime|qemu)/' },
    },
    {
      name: 'cli-kit-below-capabilities',
      severity: 'error',
      comment: 'The shared command-line kit is imported by capabilities; it imports none of them.',
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: '^src/(runtime|api|cli)/' },
    },
    {
      name: 'cluster-imports-no-capability',
      severity: 'error',
      comment:
        'Local clusters and simulators import no capability: a simulator publishes a wire protocol that a capability speaks, and add-ons are handed to the cluster.',
      from: { path: '^src/cluster/' },
      to: { path: '^src/', pathNot: '^src/(runtime|api|cli|redfish|cluster)/' },
    },
    {
      name: 'contract-is-a-leaf',
      severity: 'error',
      comment: 'src/capability.ts holds types only, from the floors below the capabilities.',
      from: { path: '^src/capability[.]ts$' },
      to: { path: '^src/', pathNot: ['^src/(runtime|api)/', '^src/cli/command[.]ts$', '^src/cluster/infra/index[.]ts$'] },
    },
    {
      name: 'capability-reaches-another-only-through-api',
      severity: 'error',
      comment: 'A capability drives another by creating its objects (src/api/), never by importing its code.',
      from: { path: '^src/([^/]+)/', pathNot: FLOORS },
      to: { path: '^src/[^/]+/', pathNot: [FLOORS, '^src/$1/'] },
    },
    {
      name: 'capability-below-composition',
      severity: 'error',
      comment: 'Capabilities are listed by src/capabilities.ts and run by the operator; they import neither.',
      from: { path: '^src/[^/]+/', pathNot: FLOORS },
      to: { path: ['^src/(cmd|operator|manifests)/', ROOT_FILES], pathNot: '^src/capability[.]ts$' },
    },
    {
      name: 'capability-sees-a-simulator-by-its-face',
      severity: 'error',
      comment:
        "A capability may use a simulator's wire protocol, its add-on and the kit's endpoint discovery, not the rest of src/cluster.",
      from: { path: '^src/[^/]+/', pathNot: FLOORS },
      to: {
        path: '^src/cluster/',
        pathNot: '^src/cluster/infra/([^/]+/(protocol|addon)|index|kit/discovery)[.]ts$',
      },
    },
    {
      name: 'simulator-reached-only-by-its-simulated-implementation',
      severity: 'error',
      comment:
        "A seam's simulated implementation (a simulated/ folder) alone speaks a simulator's protocol; the rest of a capability depends on the seam's contract, and capability.ts only hands the simulator's add-on to local clusters.",
      from: { path: '^src/[^/]+/', pathNot: [FLOORS, '/simulated/', '^src/[^/]+/capability[.]ts$'] },
      to: { path: '^src/cluster/' },
    },
    {
      name: 'implementations-of-a-seam-never-import-each-other',
      severity: 'error',
      comment:
        'The implementations of a seam sit side by side (providers/simulated/, providers/clusterapi/; hypervisors/simulated/, hypervisors/libvirt/) and depend on its contract, the files beside them, never on each other.',
      from: { path: '^(src/.+/(providers|hypervisors))/([^/]+)/' },
      to: { path: '^$1/', pathNot: ['^$1/$3/', '^$1/[^/]+[.]ts$'] },
    },
    {
      name: 'src-imports-no-tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
