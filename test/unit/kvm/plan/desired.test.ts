import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KVM_ANNOTATIONS, KVM_LABELS, type KVMCluster, VM_DRAIN_FINALIZER } from '../../../../src/api/kvm.ts';
import {
  VM_CLUSTER_LABEL,
  VM_ROLE_LABEL,
  VmEnv,
  vmHealthProbeCommand,
} from '../../../../src/api/vm-image.ts';
import { type DesiredCluster, desiredCluster } from '../../../../src/kvm/plan/desired.ts';
import { vmConfigFromEnv } from '../../../../src/kvm/vm/config.ts';
import type { K8sObject } from '../../../../src/runtime/resources.ts';
import { clusterPki, firstIndexes, kvmCluster, masterSpec, workerSpec } from '../fixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: reading into generated manifests
type Any = any;

function allObjects(d: DesiredCluster): K8sObject[] {
  return [
    d.namespace,
    d.serviceAccount,
    d.role,
    d.roleBinding,
    ...d.services,
    d.mastersBudget,
    ...d.nodes.flatMap((n) => [n.configMap, n.deployment, ...(n.pvc ? [n.pvc] : [])]),
  ];
}
const ofKind = (d: DesiredCluster, kind: string) => allObjects(d).filter((o) => o.kind === kind);
const named = (objs: K8sObject[], prefix: string) =>
  objs.filter((o) => o.metadata?.name?.startsWith(prefix)).length;
const desiredOf = (kc: KVMCluster) => desiredCluster(kc, firstIndexes(kc), clusterPki(kc));
const nodeOf = (d: DesiredCluster, id: string) => {
  const n = d.nodes.find((x) => x.node.id === id);
  assert.ok(n, `node ${id}`);
  return n;
};
const podSpec = (o: K8sObject): Any => (o as Any).spec.template.spec;
const container = (o: K8sObject): Any => podSpec(o).containers[0];

describe('desiredCluster: object counts (anchor configmap/deployment desired)', () => {
  const cases = [
    { masters: 1, workers: 1 },
    { masters: 1, workers: 3 },
    { masters: 3, workers: 3 },
  ];
  for (const c of cases) {
    it(`${c.masters} master(s) and ${c.workers} worker(s)`, () => {
      const d = desiredOf(kvmCluster(c));
      for (const kind of ['ConfigMap', 'Deployment']) {
        const objs = ofKind(d, kind);
        assert.equal(objs.length, c.masters + c.workers, kind);
        assert.equal(named(objs, 'master-'), c.masters, `${kind} master-*`);
        assert.equal(named(objs, 'worker-'), c.workers, `${kind} worker-*`);
      }
      // Always the master and worker Services, whatever the size.
      assert.deepEqual(
        ofKind(d, 'Service').map((s) => s.metadata?.name),
        ['master', 'worker'],
      );
      assert.equal(ofKind(d, 'PersistentVolumeClaim').length, 0);
      assert.equal(ofKind(d, 'Namespace').length, 1);
    });
  }

  it('everything but the Namespace lives in the namespace named as the cluster, labelled with it', () => {
    const d = desiredOf(kvmCluster({ name: 'blue', masters: 1, workers: 2 }));
    assert.equal(d.namespace.metadata?.name, 'blue');
    for (const o of allObjects(d)) {
      if (o.kind !== 'Namespace')
        assert.equal(o.metadata?.namespace, 'blue', `${o.kind} ${o.metadata?.name}`);
      assert.equal(
        o.metadata?.labels?.['kvm.nodewarden.dev/cluster'],
        'blue',
        `${o.kind} ${o.metadata?.name}`,
      );
    }
  });

  for (const missing of ['m1', 'w2']) {
    it(`throws when ${missing} has no node index yet`, () => {
      const kc = kvmCluster({ masters: 1, workers: 2 });
      const indexes = firstIndexes(kc);
      delete indexes[missing];
      assert.throws(
        () => desiredCluster(kc, indexes, clusterPki(kc)),
        new RegExp(`node ${missing} has no index`),
      );
    });
  }
});

describe('desiredCluster: the VM pods', () => {
  const d = desiredOf(kvmCluster({ name: 'c1', masters: 1, workers: 2 }));

  const sizes = [
    { id: 'm1', cpus: '1', memory: '2536M' },
    { id: 'w1', cpus: '4', memory: '10240M' },
  ];
  for (const s of sizes) {
    it(`${s.id} requests and is limited to ${s.cpus} CPU and ${s.memory}`, () => {
      const c = container(nodeOf(d, s.id).deployment);
      assert.deepEqual(c.resources.requests, { cpu: s.cpus, memory: s.memory });
      assert.deepEqual(c.resources.limits, c.resources.requests);
    });
  }

  it('the VM env carries the spec: cores, memory, role, disks at the anchor sizes, OS, ports, grace', () => {
    const kc = kvmCluster({
      spec: { workers: [workerSpec('w1', { cpus: 6, memory: '12G', disk: 40, dockerVolumeSizeGB: 80 })] },
    });
    const env = Object.fromEntries(
      container(nodeOf(desiredOf(kc), 'w1').deployment).env.map((e: Any) => [e.name, e.value]),
    );
    assert.equal(env.CORES, '6');
    assert.equal(env.MEMORY, '12288M', 'QEMU reads G as GiB and takes no Gi: the env says MiB');
    assert.equal(env.ROLE, 'worker');
    assert.equal(env.DISK_OS, '40G');
    assert.equal(env.DISK_DOCKER, '80G');
    assert.equal(env.DISK_KUBELET, '5G');
    assert.equal(env.OS_IMAGE, 'debian');
    assert.equal(env.OS_VERSION, '4230.2.0');
    assert.equal(env.HEALTH_PORT, '23007');
    assert.equal(env.GRACE_SECONDS, '600');
  });

  it("the VM env is exactly what the VM image's entrypoint reads (vmConfigFromEnv), for masters and workers", () => {
    for (const id of ['m1', 'w1']) {
      const c = container(nodeOf(d, id).deployment);
      const env = Object.fromEntries(
        c.env.map((e: Any) => [e.name, e.value ?? (e.valueFrom ? `${id}-pod` : undefined)]),
      );
      const config = vmConfigFromEnv(env);
      assert.equal(config.role, id === 'm1' ? 'master' : 'worker');
      assert.equal(config.hostname, `${id}-pod`);
      assert.deepEqual(
        c.env.map((e: Any) => e.name).sort(),
        Object.values(VmEnv)
          .filter((name) => name !== VmEnv.osMirror && name !== VmEnv.osKeyring)
          .sort(),
        'every variable of the contract but the Flatcar-only ones (os-flag.test.ts), and nothing else',
      );
    }
  });

  /** The port the exec probe asks /healthz on, from its URL. */
  const probePort = (probe: Any) => {
    const url = probe.exec.command.at(-1) as string;
    const m = /^http:\/\/127\.0\.0\.1:(\d+)\/healthz$/.exec(url);
    assert.ok(m, url);
    return Number(m[1]);
  };

  it("the probes ask the VM's health endpoint on 23000 + VNI, so two clusters on one host never share it", () => {
    const port = (vni: number) => {
      const c = container(nodeOf(desiredOf(kvmCluster({ spec: { network: { vni } } })), 'w1').deployment);
      assert.deepEqual(c.readinessProbe.exec, c.livenessProbe.exec);
      assert.deepEqual(c.livenessProbe.exec.command, vmHealthProbeCommand(23_000 + vni));
      return probePort(c.livenessProbe);
    };
    assert.equal(port(7), 23_007);
    assert.notEqual(port(8), port(7));
  });

  it("the probes run inside the pod (exec on its loopback): the pod's address belongs to the guest", () => {
    const c = container(nodeOf(d, 'w1').deployment);
    for (const probe of [c.livenessProbe, c.readinessProbe]) {
      assert.equal(probe.httpGet, undefined);
      assert.equal(probe.exec.command[0], '/bin/busybox');
    }
  });

  // The CRD bounds the VNI at 42535 so that 23000 + VNI stays a port (refused above it: kvm-crd.test.ts).
  for (const vni of [1, 4000, 42_535]) {
    it(`the probes use a valid port for VNI ${vni}`, () => {
      const dep = nodeOf(desiredOf(kvmCluster({ spec: { network: { vni } } })), 'm1').deployment;
      const c = container(dep);
      for (const probe of [c.livenessProbe, c.readinessProbe]) {
        const p = probePort(probe);
        assert.ok(p >= 1 && p <= 65_535, String(p));
      }
    });
  }

  it('one replica, Recreate: never two VMs of one node', () => {
    for (const n of d.nodes) {
      const spec = (n.deployment as Any).spec;
      assert.equal(spec.replicas, 1);
      assert.equal(spec.strategy.type, 'Recreate');
    }
  });

  it('one VM of a cluster per host: required anti-affinity on the cluster label, matching its own pods', () => {
    for (const n of d.nodes) {
      const terms = podSpec(n.deployment).affinity.podAntiAffinity
        .requiredDuringSchedulingIgnoredDuringExecution;
      assert.equal(terms.length, 1);
      assert.equal(terms[0].topologyKey, 'kubernetes.io/hostname');
      const selector = terms[0].labelSelector.matchLabels;
      assert.deepEqual(selector, { [VM_CLUSTER_LABEL]: 'c1' });
      const labels = (n.deployment as Any).spec.template.metadata.labels;
      for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v);
    }
  });

  it('the Deployment selector matches its pod template and no other node of the cluster', () => {
    for (const n of d.nodes) {
      const spec = (n.deployment as Any).spec;
      const matches = (labels: Record<string, string>) =>
        Object.entries(spec.selector.matchLabels).every(([k, v]) => labels[k] === v);
      assert.ok(matches(spec.template.metadata.labels), n.name);
      for (const other of d.nodes) {
        if (other !== n) assert.ok(!matches((other.deployment as Any).spec.template.metadata.labels));
      }
    }
  });

  it('every pod carries the drain finalizer from its template', () => {
    for (const n of d.nodes) {
      assert.deepEqual((n.deployment as Any).spec.template.metadata.finalizers, [VM_DRAIN_FINALIZER]);
    }
  });

  it('the Deployment and its pods carry the release and the node-spec hash', () => {
    for (const n of d.nodes) {
      const dep = n.deployment as Any;
      for (const ann of [dep.metadata.annotations, dep.spec.template.metadata.annotations]) {
        assert.equal(ann[KVM_ANNOTATIONS.release], '20.1.0');
        assert.equal(ann[KVM_ANNOTATIONS.nodeSpec], n.specHash);
      }
      assert.match(n.specHash, /^[0-9a-f]{16}$/);
    }
  });

  it("mounts the node's own Ignition ConfigMap", () => {
    for (const n of d.nodes) {
      const vol = podSpec(n.deployment).volumes.find((v: Any) => v.name === 'ignition');
      assert.equal(vol.configMap.name, n.configMap.metadata?.name);
      assert.equal(n.configMap.metadata?.name, n.name);
      assert.ok((n.configMap as Any).data.user_data.length > 0);
    }
  });
});

describe('desiredCluster: the masters disruption budget', () => {
  const d = desiredOf(kvmCluster({ masters: 3, workers: 2 }));
  const pdb = d.mastersBudget as Any;
  const selects = (labels: Record<string, string>) =>
    Object.entries(pdb.spec.selector.matchLabels).every(([k, v]) => labels[k] === v);
  it('all serving masters but one (minAvailable 2 of 3)', () => {
    assert.equal(pdb.kind, 'PodDisruptionBudget');
    assert.equal(pdb.spec.minAvailable, 2);
    assert.equal(pdb.spec.maxUnavailable, undefined);
    // A master out loses its label instead; a serving one whose pod reads not Ready for a moment stays kept.
    assert.equal(pdb.spec.unhealthyPodEvictionPolicy, undefined);
  });
  it('one master: none kept (it may always go)', () => {
    const one = desiredOf(kvmCluster({ masters: 1, workers: 1 })).mastersBudget as Any;
    assert.equal(one.spec.minAvailable, 0);
  });
  it("selects the master VM pods of its cluster once they carry the serving label, a new VM's not", () => {
    const template = (n: (typeof d.nodes)[number]) => (n.deployment as Any).spec.template.metadata.labels;
    assert.deepEqual(
      d.nodes.filter((n) => selects({ ...template(n), [KVM_LABELS.serving]: 'true' })).map((n) => n.node.id),
      ['m1', 'm2', 'm3'],
    );
    assert.deepEqual(
      d.nodes.filter((n) => selects(template(n))),
      [],
    );
  });
});

describe('desiredCluster: Services', () => {
  const kc = kvmCluster({ masters: 3, workers: 2 });
  const d = desiredOf(kc);
  const svc = (name: string): Any => d.services.find((s) => s.metadata?.name === name);

  it('both select their VM pods by cluster and role (no hand-kept Endpoints)', () => {
    assert.equal(allObjects(d).filter((o) => o.kind === 'Endpoints').length, 0);
    for (const role of ['master', 'worker'] as const) {
      const selector = svc(role).spec.selector;
      assert.deepEqual(selector, { [VM_CLUSTER_LABEL]: 'c1', [VM_ROLE_LABEL]: role });
      const selected = d.nodes.filter((n) => {
        const labels = (n.deployment as Any).spec.template.metadata.labels;
        return Object.entries(selector).every(([k, v]) => labels[k] === v);
      });
      assert.deepEqual(
        selected.map((n) => n.node.role),
        role === 'master' ? ['master', 'master', 'master'] : ['worker', 'worker'],
      );
    }
  });

  it('every port says TCP', () => {
    for (const s of d.services) for (const p of (s as Any).spec.ports) assert.equal(p.protocol, 'TCP');
  });

  it('master: ClusterIP with etcd 2379 and the API port', () => {
    const d6443 = desiredOf(kvmCluster({ spec: { api: { domain: 'api.x', securePort: 6443 } } }));
    const m = d6443.services.find((s) => s.metadata?.name === 'master') as Any;
    assert.equal(m.spec.type, 'ClusterIP');
    assert.deepEqual(
      m.spec.ports.map((p: Any) => [p.name, p.port, p.targetPort]),
      [
        ['etcd', 2379, 2379],
        ['api', 6443, 6443],
      ],
    );
  });

  it('worker: NodePort from the default mappings, nodePorts left to the API server', () => {
    const w = svc('worker');
    assert.equal(w.spec.type, 'NodePort');
    assert.deepEqual(
      w.spec.ports.map((p: Any) => [p.name, p.targetPort, p.nodePort]),
      [
        ['http', 30010, undefined],
        ['https', 30011, undefined],
      ],
    );
  });

  it('worker: a given nodePort is kept', () => {
    const given = desiredOf(
      kvmCluster({ spec: { portMappings: [{ name: 'web', nodePort: 31080, targetPort: 8080 }] } }),
    );
    const w = given.services.find((s) => s.metadata?.name === 'worker') as Any;
    assert.deepEqual(w.spec.ports, [
      { name: 'web', protocol: 'TCP', port: 8080, targetPort: 8080, nodePort: 31080 },
    ]);
  });
});

describe('desiredCluster: etcd storage (anchor pvc desired)', () => {
  const etcdVolume = (n: DesiredCluster['nodes'][number]) =>
    podSpec(n.deployment).volumes.find((v: Any) => v.name === 'etcd-data');

  it('persistentVolume: one PVC per master, claimed by its pod, none for workers', () => {
    const d = desiredOf(
      kvmCluster({
        masters: 3,
        workers: 3,
        spec: { storage: { type: 'persistentVolume', storageClassName: 'fast' } },
      }),
    );
    const pvcs = ofKind(d, 'PersistentVolumeClaim') as Any[];
    assert.equal(pvcs.length, 3);
    for (const n of d.nodes) {
      if (n.node.role === 'worker') {
        assert.equal(n.pvc, undefined);
        assert.equal(etcdVolume(n), undefined);
        continue;
      }
      const pvc = n.pvc as Any;
      assert.ok(pvc, n.name);
      assert.equal(etcdVolume(n).persistentVolumeClaim.claimName, pvc.metadata.name);
      assert.equal(pvc.spec.storageClassName, 'fast');
      assert.equal(pvc.spec.resources.requests.storage, '15Gi');
    }
    assert.equal(new Set(pvcs.map((p) => p.metadata.name)).size, 3, 'distinct claims');
  });

  for (const [name, storage] of [
    ['hostPath', { type: 'hostPath' as const }],
    ['no storage given', undefined],
  ] as const) {
    it(`${name}: no PVC, each master on a host directory of its own index`, () => {
      const kc = kvmCluster({ masters: 3, workers: 1, spec: storage ? { storage } : {} });
      const d = desiredOf(kc);
      assert.equal(ofKind(d, 'PersistentVolumeClaim').length, 0);
      const paths = d.nodes.filter((n) => n.node.role === 'master').map((n) => etcdVolume(n).hostPath.path);
      assert.deepEqual(
        paths,
        [1, 2, 3].map((i) => `/var/lib/nodewarden/kvm/c1/etcd-${i}`),
      );
    });
  }
});

describe('desiredCluster: the node-spec hash', () => {
  const base = kvmCluster({ masters: 1, workers: 2 });
  const hashes = (kc: KVMCluster) =>
    Object.fromEntries(desiredOf(kc).nodes.map((n) => [n.node.id, n.specHash]));
  const before = hashes(base);
  const withSpec = (spec: Partial<KVMCluster['spec']>) => kvmCluster({ masters: 1, workers: 2, spec });

  it('is the same for the same spec (re-applying changes nothing)', () => {
    assert.deepEqual(hashes(kvmCluster({ masters: 1, workers: 2 })), before);
  });

  it('differs between nodes', () => {
    assert.equal(new Set(Object.values(before)).size, 3);
  });

  const releaseChanges: Array<[string, KVMCluster['spec']['release']]> = [
    ['release version', { ...base.spec.release, version: '20.2.0' }],
    ['Kubernetes version', { ...base.spec.release, kubernetesVersion: 'v1.38.0' }],
    ['OS version', { ...base.spec.release, osVersion: '4300.0.0' }],
  ];
  for (const [what, release] of releaseChanges) {
    it(`changes on every node with the ${what}`, () => {
      const after = hashes(withSpec({ release }));
      for (const id of Object.keys(before)) assert.notEqual(after[id], before[id], id);
    });
  }

  const nodeChanges: Array<[string, Partial<ReturnType<typeof workerSpec>>]> = [
    ['cpus', { cpus: 5 }],
    ['memory', { memory: '9G' }],
    ['disk', { disk: 30 }],
  ];
  for (const [what, change] of nodeChanges) {
    it(`changes on that node only with its ${what}`, () => {
      const after = hashes(withSpec({ workers: [workerSpec('w1', change), workerSpec('w2')] }));
      assert.notEqual(after.w1, before.w1);
      assert.equal(after.w2, before.w2, "another worker's spec does not roll w2");
      assert.equal(after.m1, before.m1, "a worker's spec does not roll the master");
    });
  }

  it('master size changes roll that master only', () => {
    const after = hashes(withSpec({ masters: [masterSpec('m1', { memory: '2G' })] }));
    assert.notEqual(after.m1, before.m1);
    assert.equal(after.w1, before.w1);
  });

  it('does not change with the port mappings or the unhealthy-node and drain settings', () => {
    const after = hashes(
      withSpec({
        portMappings: [{ name: 'web', nodePort: 31080, targetPort: 8080 }],
        unhealthyNodes: { terminate: true },
        drain: { timeout: '1m' },
      }),
    );
    assert.deepEqual(after, before);
  });

  it('does not change on existing nodes when a worker is added', () => {
    const after = hashes(kvmCluster({ masters: 1, workers: 3 }));
    for (const id of Object.keys(before)) assert.equal(after[id], before[id], id);
  });
});
