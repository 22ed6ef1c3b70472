import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AGENT_DIR,
  agentAccess,
  agentRole,
  LIBVIRT_RUN_DIR,
  libvirtRunVolume,
} from '../../../../src/baremetal/virtualhosts/hypervisors/libvirt/agent-pod.ts';
import {
  agentDaemonSet,
  machineId,
  nicOwner,
  nodeOfOwner,
  type Pool,
  vmOfOwner,
} from '../../../../src/baremetal/virtualhosts/objects.ts';

describe('machine ids on the fleet', () => {
  it('are <namespace>-<vm> when that fits a DNS label', () => {
    assert.equal(machineId('default', 'lab-worker-000-worker-1'), 'default-lab-worker-000-worker-1');
  });
  it('are cut to 63 characters with a hash of the whole, stable and distinct', () => {
    const ns = 'a-rather-long-namespace-for-virtual-hosts';
    const a = machineId(ns, 'lab-hypervisor-node-0001-worker-1');
    const b = machineId(ns, 'lab-hypervisor-node-0001-worker-2');
    assert.ok(a.length <= 63 && b.length <= 63);
    assert.match(a, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    assert.notEqual(a, b);
    assert.equal(a, machineId(ns, 'lab-hypervisor-node-0001-worker-1'));
  });
});

describe('IPAM owner keys', () => {
  it('name the VM and NIC, and read back', () => {
    const owner = nicOwner({ node: 'worker-000', flavor: 'master', index: 12 }, 'enp1s0');
    assert.equal(owner, 'vm/worker-000/master/12/enp1s0');
    assert.deepEqual(vmOfOwner(owner), { node: 'worker-000', flavor: 'master', index: 12 });
    assert.equal(vmOfOwner('bridge/worker-000'), undefined);
    assert.equal(nodeOfOwner('bridge/worker-000'), 'worker-000');
    assert.equal(nodeOfOwner('dhcp/worker-001'), 'worker-001');
    assert.equal(nodeOfOwner(owner), undefined);
  });
});

const pool = (image?: string): Pool =>
  ({
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'VirtualHostPool',
    metadata: { name: 'lab', namespace: 'infra', uid: 'u-1' },
    spec: {
      nodeSelector: { matchLabels: { hv: 'true' } },
      networks: [],
      nodes: [],
      bmcCredentials: { username: 'a', password: 'b' },
      ...(image ? { daemonSet: { image } } : {}),
    },
  }) as unknown as Pool;

type PodSpec = {
  hostNetwork?: boolean;
  serviceAccountName?: string;
  nodeSelector?: Record<string, string>;
  containers: {
    image: string;
    args?: string[];
    env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
    readinessProbe?: { httpGet: { scheme: string; port: number; path: string } };
    livenessProbe?: { httpGet: { scheme: string; port: number; path: string } };
    securityContext?: Record<string, unknown>;
    volumeMounts: { name: string; mountPath: string; subPathExpr?: string }[];
  }[];
  volumes?: { name: string; hostPath?: { path: string } }[];
};
const podOf = (ds: object) => (ds as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

describe('the agent DaemonSet, one way per backend', () => {
  it('runs pause where the simulated fleet acts for every node', () => {
    const pod = podOf(agentDaemonSet(pool(), { kind: 'pause' }));
    assert.equal(pod.containers[0]!.image, 'registry.k8s.io/pause:3.10');
    assert.equal(pod.hostNetwork, undefined);
    assert.deepEqual(pod.nodeSelector, { hv: 'true' });
  });

  it("runs `nodewarden vm-host agent` from the operator's image against the node's libvirtd, on the node's address", () => {
    const pod = podOf(agentDaemonSet(pool(), { kind: 'vm-host-agent', image: 'localhost/nodewarden:1.2.3' }));
    const c = pod.containers[0]!;
    assert.equal(c.image, 'localhost/nodewarden:1.2.3');
    assert.deepEqual(c.args?.slice(0, 2), ['vm-host', 'agent']);
    assert.ok(c.args?.includes('--publish'));
    assert.equal(
      c.args?.[c.args.indexOf('--libvirt-uri') + 1],
      'qemu:///system?socket=/run/libvirt/libvirt-sock',
    );
    assert.equal(c.args?.[c.args.indexOf('--listen') + 1], '$(NODE_IP):8000');
    assert.equal(c.env?.find((e) => e.name === 'NODE_IP')?.valueFrom?.fieldRef?.fieldPath, 'status.hostIP');
    assert.equal(pod.hostNetwork, true);
    assert.equal(pod.serviceAccountName, 'lab-vm-host-agent');
    // The same path inside and out: libvirtd on the host writes where the agent says.
    const hostPaths = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v.hostPath?.path]));
    const mounts = Object.fromEntries(c.volumeMounts.map((m) => [m.name, m.mountPath]));
    assert.equal(hostPaths['libvirt-run'], LIBVIRT_RUN_DIR);
    assert.equal(mounts['libvirt-run'], LIBVIRT_RUN_DIR);
    assert.equal(hostPaths['agent-dir'], AGENT_DIR);
    assert.equal(mounts['agent-dir'], AGENT_DIR);
    assert.deepEqual(c.readinessProbe?.httpGet, {
      scheme: 'HTTPS',
      port: 8000,
      path: '/nodewarden/vm-host/v1/healthz',
    });
    assert.equal(c.livenessProbe?.httpGet.path, '/redfish/v1/');
    assert.deepEqual(c.securityContext?.capabilities, { drop: ['ALL'] });
    assert.equal(c.securityContext?.allowPrivilegeEscalation, false);
  });

  it("mounts the node's own socket folder where nodes share one file system ($(NODE_NAME) in --vm-host-libvirt-dir)", () => {
    const run = { kind: 'vm-host-agent', image: 'x', libvirtDir: '/tmp/nw-lv/$(NODE_NAME)/sock' } as const;
    const pod = podOf(agentDaemonSet(pool(), run));
    const mount = pod.containers[0]!.volumeMounts.find((m) => m.name === 'libvirt-run');
    assert.deepEqual(mount, {
      name: 'libvirt-run',
      mountPath: LIBVIRT_RUN_DIR,
      subPathExpr: '$(NODE_NAME)/sock',
    });
    const volume = (pod.volumes ?? []).find((v) => v.name === 'libvirt-run');
    assert.deepEqual(volume?.hostPath, { path: '/tmp/nw-lv', type: 'Directory' });
    assert.ok(
      pod.containers[0]!.env?.some((e) => e.name === 'NODE_NAME'),
      'the variable subPathExpr expands',
    );
    assert.deepEqual(libvirtRunVolume('/srv/libvirt-$(NODE_NAME)'), {
      hostPath: '/srv',
      subPathExpr: 'libvirt-$(NODE_NAME)',
    });
    assert.deepEqual(libvirtRunVolume('/var/run/libvirt'), { hostPath: '/var/run/libvirt' });
  });

  it("takes the pool's spec.daemonSet.image over the operator's", () => {
    const pod = podOf(agentDaemonSet(pool('example/agent:9'), { kind: 'vm-host-agent', image: 'x' }));
    assert.equal(pod.containers[0]!.image, 'example/agent:9');
  });

  it('gives the agents no right but get and patch on the one Secret they publish in', () => {
    const role = agentRole() as unknown as { metadata: { namespace: string }; rules: unknown[] };
    assert.equal(role.metadata.namespace, 'kube-system');
    assert.deepEqual(role.rules, [
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['nodewarden-vm-host-agents'],
        verbs: ['get', 'patch'],
      },
    ]);
    const { serviceAccount, roleBinding } = agentAccess('infra', 'lab', []);
    assert.equal(serviceAccount.metadata?.namespace, 'infra');
    const rb = roleBinding as unknown as { subjects: unknown[]; metadata: { namespace: string } };
    assert.equal(rb.metadata.namespace, 'kube-system');
    assert.deepEqual(rb.subjects, [
      { kind: 'ServiceAccount', name: 'lab-vm-host-agent', namespace: 'infra' },
    ]);
  });
});
