// Bad input at the KVMCluster door, against the real API server and the CRD's
// own schema and CEL rules: wrong types, unparsable memory, out-of-range VNIs
// and ports, unknown enum values, oversized strings and lists, duplicate node
// ids (within a role and across roles), duplicate ports, and cross-field
// conflicts. Each is refused with a message naming the field; nothing is created.
import { KVMClusters } from '../../src/api/kvm.ts';
import { type BadInput, refusesBadInput } from '../harness/bad-input.ts';

type Spec = Record<string, unknown>;
type Obj = Record<string, unknown>;

const good: Spec = {
  masters: [{ id: 'm1', cpus: 2, memory: '2G' }],
  workers: [
    { id: 'w1', cpus: 2, memory: '4G', hostVolumes: [{ mountTag: 'data', hostPath: '/srv/data' }] },
    { id: 'w2', cpus: 2, memory: '4Gi' },
  ],
  release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
  network: { vni: 17, podCIDR: '10.2.0.0/16' },
  api: { domain: 'api.c1.example.com', securePort: 443 },
  portMappings: [{ name: 'http', targetPort: 30010, nodePort: 31010 }],
  storage: { type: 'hostPath' },
  unhealthyNodes: { terminate: true, notReadyFor: '30m', maxFraction: '10%', pauseBetween: '10m' },
  drain: { timeout: '10m' },
};

const worker = (o: Obj) => (s: Spec) => ({
  ...s,
  workers: [{ ...(s.workers as Obj[])[0], ...o }, (s.workers as Obj[])[1]],
});
const master = (o: Obj) => (s: Spec) => ({ ...s, masters: [{ ...(s.masters as Obj[])[0], ...o }] });

const cases: BadInput[] = [
  [
    'no masters',
    { masters: [] },
    /spec\.masters: Invalid value: .*should have at least 1 items|spec\.masters.*must have at least 1/,
  ],
  ['cpus as a string', master({ cpus: 'two' }), /spec\.masters\[0\]\.cpus: Invalid value: "string"/],
  ['zero cpus', master({ cpus: 0 }), /spec\.masters\[0\]\.cpus: Invalid value: 0/],
  [
    'memory that does not parse',
    worker({ memory: 'eight gigs' }),
    /spec\.workers\[0\]\.memory: Invalid value: "eight gigs"/,
  ],
  ['memory in an unknown unit', worker({ memory: '8T' }), /spec\.workers\[0\]\.memory/],
  ['a node id that is not a DNS label', worker({ id: 'W_1' }), /spec\.workers\[0\]\.id/],
  ['a node id too long', worker({ id: 'w'.repeat(33) }), /spec\.workers\[0\]\.id: Too long/],
  [
    'the same id twice among workers',
    (s) => ({ ...s, workers: [(s.workers as Obj[])[0], { ...(s.workers as Obj[])[1], id: 'w1' }] }),
    /spec\.workers\[1\]: Duplicate value/,
  ],
  ["a worker with a master's id", worker({ id: 'm1' }), /node ids must be unique across masters and workers/],
  [
    'too many masters',
    { masters: Array.from({ length: 8 }, (_, i) => ({ id: `m${i}`, cpus: 1, memory: '1G' })) },
    /spec\.masters: Too many: 8/,
  ],
  ['VNI zero', { network: { vni: 0 } }, /spec\.network\.vni: Invalid value: 0/],
  [
    'VNI whose health port would pass 65535',
    { network: { vni: 42_536 } },
    /spec\.network\.vni: Invalid value: 42536/,
  ],
  ['a pod CIDR that is not one', { network: { vni: 17, podCIDR: '10.2.0.0' } }, /spec\.network\.podCIDR/],
  [
    'a pod range with too few /25s for the nodes',
    { network: { vni: 17, podCIDR: '10.2.0.0/17' } },
    /spec\.network\.podCIDR: Invalid value.*\/16 or larger/,
  ],
  [
    'a pod range whose address is not one',
    { network: { vni: 17, podCIDR: '10.2.300.0/16' } },
    /spec\.network\.podCIDR: Invalid value.*\/16 or larger/,
  ],
  [
    'a kubernetes version that is not one',
    (s) => ({ ...s, release: { ...(s.release as Obj), kubernetesVersion: 'latest' } }),
    /spec\.release\.kubernetesVersion/,
  ],
  ['no release', { release: undefined }, /spec\.release: Required value/],
  [
    'a secure port out of range',
    { api: { domain: 'a.example.com', securePort: 70_000 } },
    /spec\.api\.securePort: Invalid value: 70000/,
  ],
  [
    'a nodePort outside the NodePort range',
    { portMappings: [{ name: 'http', targetPort: 80, nodePort: 8080 }] },
    /spec\.portMappings\[0\]\.nodePort/,
  ],
  [
    'two mappings on one targetPort',
    {
      portMappings: [
        { name: 'a', targetPort: 80 },
        { name: 'b', targetPort: 80 },
      ],
    },
    /each targetPort may be mapped once/,
  ],
  [
    'two mappings on one nodePort',
    {
      portMappings: [
        { name: 'a', targetPort: 80, nodePort: 31000 },
        { name: 'b', targetPort: 81, nodePort: 31000 },
      ],
    },
    /each nodePort may be used once/,
  ],
  ['an unknown storage type', { storage: { type: 'nfs' } }, /spec\.storage\.type: Unsupported value: "nfs"/],
  [
    'a storage class with hostPath storage',
    { storage: { type: 'hostPath', storageClassName: 'fast' } },
    /storageClassName applies to storage.type persistentVolume only/,
  ],
  [
    'a mountTag with a space',
    worker({ hostVolumes: [{ mountTag: 'my data', hostPath: '/x' }] }),
    /spec\.workers\[0\]\.hostVolumes\[0\]\.mountTag/,
  ],
  [
    'notReadyFor that is not a duration',
    { unhealthyNodes: { terminate: true, notReadyFor: 'half an hour' } },
    /spec\.unhealthyNodes\.notReadyFor/,
  ],
  [
    'maxFraction over 100%',
    { unhealthyNodes: { terminate: true, maxFraction: '150%' } },
    /spec\.unhealthyNodes\.maxFraction/,
  ],
  ['a drain timeout in days', { drain: { timeout: '2d' } }, /spec\.drain\.timeout/],
  ['an oversized API domain', { api: { domain: 'a'.repeat(254) } }, /spec\.api\.domain: Too long/],
  ['no spec', undefined, /spec: Required value/],
];

refusesBadInput(KVMClusters, good, cases);
