// Real nodes beside kwok's: kubelet, containerd and kube-proxy built here, in
// network namespaces the cluster makes. Pods run as processes, reach each
// other through Services and cluster DNS, answer kubectl logs, exec and
// port-forward, come back after down and up, reach the simulated cloud through
// the relay, and delete leaves nothing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { eventually } from '../harness/cluster.ts';
import {
  clusterCommand,
  hostSysctls,
  kubectl,
  kubectlApply,
  leftovers,
  realNodesSkipReason,
  TESTAPP_IMAGE,
  testappDeployment,
} from '../harness/real-nodes.ts';

const skip = realNodesSkipReason();
if (skip) console.log(`# real nodes: skipped: ${skip}`);

const NAME = 'nwreal';
const dir = () => join(stateDir(), 'clusters', NAME);
const kubeconfig = () => join(dir(), 'kubeconfig.yaml');
const k = (...args: string[]) => kubectl(kubeconfig(), ...args);
const applyJson = (obj: object) => kubectlApply(kubeconfig(), obj);

interface PodList {
  items: {
    metadata: { name: string };
    spec: { nodeName?: string };
    status: {
      phase?: string;
      podIP?: string;
      containerStatuses?: { ready: boolean; restartCount: number }[];
    };
  }[];
}
const pods = async (selector: string) =>
  JSON.parse(await k('get', 'pods', '-l', selector, '-o', 'json')) as PodList;
const allReady = (l: PodList, n: number) =>
  l.items.length === n && l.items.every((p) => p.status.containerStatuses?.every((c) => c.ready))
    ? l
    : undefined;

const WEB = testappDeployment({ name: 'web', replicas: 2, spread: 'DoNotSchedule' });
const WEB_SERVICE = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web' },
  spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
};

describe('real nodes in a local cluster', { skip }, () => {
  let sysctlsBefore: Record<string, string>;
  before(async () => {
    sysctlsBefore = hostSysctls();
    await clusterCommand('up', '--name', NAME, '--nodes', '1', '--real-nodes', '2', '--timeout', '3m');
  });
  after(async () => {
    if (existsSync(dir())) await clusterCommand('delete', '--name', NAME).catch(() => {});
  });

  it('runs two real nodes Ready beside a kwok node, and says which are real', async () => {
    const status = await clusterCommand('status', '--name', NAME);
    assert.match(status, /3\/3 Ready, 2 of them real/);
    const nodes = JSON.parse(await k('get', 'nodes', '-l', 'nodewarden.dev/real', '-o', 'json')) as {
      items: {
        metadata: { name: string; annotations?: Record<string, string> };
        status: { nodeInfo: { containerRuntimeVersion: string } };
      }[];
    };
    assert.deepEqual(nodes.items.map((n) => n.metadata.name).sort(), ['real-000', 'real-001']);
    for (const n of nodes.items) {
      assert.equal(n.status.nodeInfo.containerRuntimeVersion, 'containerd://2.4.2');
      assert.equal(n.metadata.annotations?.['kwok.x-k8s.io/node'], undefined, 'kwok left it alone');
    }
    const lease = JSON.parse(await k('get', 'lease', '-n', 'kube-node-lease', 'real-000', '-o', 'json'));
    assert.equal(lease.spec.holderIdentity, 'real-000', "the node's own kubelet renews its lease");
  });

  it("leaves the host's sysctls as they were", () => {
    assert.deepEqual(hostSysctls(), sysctlsBefore);
  });

  it('runs pods that reach each other across nodes through a Service and cluster DNS', async () => {
    for (const obj of [WEB, WEB_SERVICE]) await applyJson(obj);
    const web = await eventually(
      '2 web pods Ready on real nodes',
      async () => allReady(await pods('app=web'), 2),
      120_000,
    );
    assert.equal(new Set(web.items.map((p) => p.spec.nodeName)).size, 2, 'one per real node');
    // kube-proxy routes the Service once its EndpointSlice lists the pods; until then it refuses.
    await eventually(
      "the web Service's EndpointSlice listing both pods ready",
      async () => {
        const slices = JSON.parse(
          await k('get', 'endpointslices', '-l', 'kubernetes.io/service-name=web', '-o', 'json'),
        ).items as { endpoints?: { conditions?: { ready?: boolean } }[] }[];
        const ready = slices.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready);
        return ready.length === 2 || undefined;
      },
      60_000,
    );
    // A client pod on each node fetches through the Service by name: DNS, kube-proxy and routes between nodes.
    for (const node of ['real-000', 'real-001']) {
      const name = `client-${node}`;
      await applyJson({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          nodeName: node,
          // Each node's kube-proxy writes its rules on its own sync after the slice: a refused first
          // try is retried by the kubelet (restarts are printed), a client that never gets through fails.
          restartPolicy: 'OnFailure',
          containers: [
            {
              name: 'get',
              image: TESTAPP_IMAGE,
              imagePullPolicy: 'Never',
              args: ['get', 'http://web.default.svc.cluster.local/'],
            },
          ],
        },
      });
      const done = await eventually(
        `${name} to succeed`,
        async () => {
          const p = JSON.parse(await k('get', 'pod', name, '-o', 'json'));
          return p.status.phase === 'Succeeded' ? p : undefined;
        },
        90_000,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await k('logs', name).catch((e: Error) => e.message)}`);
      });
      const restarts = done.status.containerStatuses?.[0]?.restartCount ?? 0;
      if (restarts > 0)
        console.log(`# ${name}: ${restarts} refused tries before kube-proxy routed the Service`);
      const log = await k('logs', name);
      assert.ok(
        web.items.some((p) => log.includes(p.metadata.name)),
        `answered by a web pod: ${log}`,
      );
    }
  });

  it('serves kubectl logs, exec and port-forward for pods on real nodes', async () => {
    const [pod] = (await pods('app=web')).items;
    assert.ok(pod);
    assert.match(await k('logs', pod.metadata.name), /GET/);
    assert.match(
      await k('exec', pod.metadata.name, '--', '/testapp', 'resolve', 'kubernetes.default.svc.cluster.local'),
      /10\.0\.0\.1/,
    );
    const answer = await portForwardGet(pod.metadata.name);
    assert.equal(answer.trim(), pod.metadata.name);
  });

  it('brings the pods back after down and up', async () => {
    await clusterCommand('down', '--name', NAME);
    assert.deepEqual(
      (await leftovers(NAME, dir())).filter((l) => l.startsWith('process')),
      [],
      'down stops every process',
    );
    await clusterCommand('up', '--name', NAME, '--timeout', '3m');
    // Until its kubelet syncs them, the pods' status is the one from before `down` (Ready, no restart).
    await eventually(
      'the same web pods restarted and Ready again',
      async () => {
        const web = allReady(await pods('app=web'), 2);
        return web?.items.every((p) => (p.status.containerStatuses?.[0]?.restartCount ?? 0) >= 1)
          ? web
          : undefined;
      },
      120_000,
    );
  });

  it('reaches the simulated cloud from a pod at the address recorded for pods (after down and up too)', async () => {
    const published = JSON.parse(
      await k(
        'get',
        'configmap',
        '-n',
        'kube-system',
        'nodewarden-simulated-cloud',
        '-o',
        'jsonpath={.data}',
      ),
    ) as { endpoint: string; inClusterEndpoint?: string };
    const port = new URL(published.endpoint).port;
    assert.equal(
      published.inClusterEndpoint,
      `http://172.30.0.1:${port}`,
      'its own port at the cluster gateway',
    );
    const [pod] = (await pods('app=web')).items;
    assert.ok(pod);
    const get = (url: string) =>
      k('exec', pod.metadata.name, '--', '/testapp', 'get', url).catch((e: Error) => e.message);
    assert.match(await get(`${published.inClusterEndpoint}/groups`), /200[\s\S]*worker/);
    // The host's loopback is not the pod's: the address the cloud published for the host answers nothing there.
    assert.doesNotMatch(await get(`${published.endpoint}/groups`), /200/);
  });

  it('leaves no process, mount, namespace or cgroup after delete', async () => {
    await clusterCommand('delete', '--name', NAME);
    assert.deepEqual(await leftovers(NAME, dir()), []);
    assert.deepEqual(hostSysctls(), sysctlsBefore);
  });
});

/** `kubectl port-forward pod :8080`, then a GET through the port it picked. */
async function portForwardGet(pod: string): Promise<string> {
  const bins = await controlPlaneBinaries({ quiet: true });
  const child = spawn(bins.kubectl, ['--kubeconfig', kubeconfig(), 'port-forward', pod, ':8080'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d;
        const m = /127\.0\.0\.1:(\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.on('close', () => reject(new Error(`port-forward ended: ${out}`)));
    });
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return await res.text();
  } finally {
    child.kill();
  }
}
