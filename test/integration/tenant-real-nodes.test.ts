// A TenantCluster's support services on real nodes (kubelet, containerd, runc),
// from the images built here (`make service-images`) loaded into the nodes:
// placed where no node fits, ServicesRunning says Unschedulable with the
// scheduler's own message (and an Event); placed on the real nodes, HAProxy
// balances TLS connections over the hosts' API addresses (stand-in API servers
// in pods, their addresses written into the hosts' network data) and the jump
// host's sshd takes the key the TenantCluster gives, refuses any other, and
// has redfishtool and the `host` helper. The hosts are the simulated BMC
// fleet's (`cluster up --bare-metal-hosts`), made available by the real host
// controller; the operator runs out of cluster against the nodes' API server.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  HAPROXY_IMAGE_REPOSITORY,
  NODEWARDEN_VERSION,
  serviceImageName,
} from '../../src/api/service-images.ts';
import { stateDir } from '../../src/cluster/local-cluster.ts';
import { controlPlaneBinaries, REPO_ROOT } from '../../src/cluster/toolchain.ts';
import { eventually } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';
import { clusterCommand, kubectl, kubectlApply, realNodesSkipReason } from '../harness/real-nodes.ts';
import { readyServicePods, servicesRolledOut } from '../harness/tenant-services.ts';

const run = promisify(execFile);
const skip = realNodesSkipReason();
if (skip) console.log(`# tenant services on real nodes: skipped: ${skip}`);

const NAME = 'nwtenant';
const NETNS = `nw-${NAME}`;
const TC = 'edge';
const HAPROXY_IMAGE = serviceImageName(HAPROXY_IMAGE_REPOSITORY, NODEWARDEN_VERSION);
const API_NODE_PORT = 31443;
const SSH_NODE_PORT = 32222;
/** One per host: whichever two the cluster picks for its control plane, their answers tell them apart. */
const STAND_INS = ['apiserver-a', 'apiserver-b', 'apiserver-c'];
const REAL = { 'nodewarden.dev/real': 'true' };
const kubeconfig = () => join(stateDir(), 'clusters', NAME, 'kubeconfig.yaml');
const k = (...args: string[]) => kubectl(kubeconfig(), ...args);
const apply = (obj: object) => kubectlApply(kubeconfig(), obj);
const work = mkdtempSync(join(tmpdir(), 'nw-tenant-real-'));
after(() => rmSync(work, { recursive: true, force: true }));
// biome-ignore lint/suspicious/noExplicitAny: objects read field by field as kubectl prints them
type Any = any;
const json = async (...args: string[]): Promise<Any> => JSON.parse(await k(...args, '-o', 'json'));
/** A command in the cluster's network namespace: where the nodes' and pods' addresses are reached. */
const inCluster = (cmd: string, ...args: string[]) =>
  run('ip', ['netns', 'exec', NETNS, cmd, ...args], { timeout: 30_000 });

/** An HTTPS server at :6443 answering /readyz with its pod's name: an API server as HAProxy's check sees one. */
const STAND_IN_CONFIG = `global
  log stdout format raw local0
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend api
  bind :6443 ssl crt /etc/stand-in/tls.pem
  http-request return status 200 content-type text/plain lf-string "ok from %[env(POD_NAME)]"
`;

function standInPod(name: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels: { app: 'apiserver-stand-in' } },
    spec: {
      nodeSelector: REAL,
      containers: [
        {
          name: 'api',
          image: HAPROXY_IMAGE,
          imagePullPolicy: 'Never',
          args: ['-f', '/etc/stand-in/haproxy.cfg'],
          env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
          readinessProbe: { tcpSocket: { port: 6443 }, periodSeconds: 2 },
          volumeMounts: [{ name: 'files', mountPath: '/etc/stand-in', readOnly: true }],
        },
      ],
      volumes: [{ name: 'files', secret: { secretName: 'apiserver-stand-in' } }],
    },
  };
}

function tenantCluster(placement: object, publicKey: string) {
  return {
    apiVersion: 'baremetal.nodewarden.dev/v1alpha1',
    kind: 'TenantCluster',
    metadata: { name: TC, namespace: 'default' },
    spec: {
      nodes: { ControlPlane: { count: { active: 2 } } },
      services: {
        controlPlaneLoadBalancer: {
          nodePort: API_NODE_PORT,
          nodeInterfaceId: 'oam-ipv4',
          image: HAPROXY_IMAGE,
          placement,
        },
        // No image: the jump host runs the default, built here.
        jumpHost: {
          nodePort: SSH_NODE_PORT,
          nodeInterfaceId: 'oam-ipv4',
          nodeSSHPrivateKeys: `${TC}-node-keys`,
          sshAuthorizedKeys: [publicKey],
          placement: { nodeSelector: REAL },
        },
      },
    },
  };
}

let operatorLog: (() => Record<string, unknown>[]) | undefined;
const condition = (tc: Any, type: string) => tc.status?.conditions?.find((c: Any) => c.type === type);
/** The TenantCluster once `type` is `status` (for `reason`, if given) at its current generation. */
const until = (type: string, status: string, reason?: string, ms = 180_000) =>
  eventually(
    `${TC} ${type}=${status}${reason ? ` (${reason})` : ''}`,
    async () => {
      const tc = await json('get', 'tenantcluster', TC);
      const c = condition(tc, type);
      const at = c?.status === status && c.observedGeneration === tc.metadata.generation;
      return at && (!reason || c.reason === reason) ? tc : undefined;
    },
    ms,
    1000,
  ).catch(async (err: Error) => {
    // What the cluster and its pods said, for a failure seen only in CI's log.
    const state = await k('get', 'tenantcluster,pods,events', '-o', 'wide').catch((e: Error) => e.message);
    const conditions = await k('get', 'tenantcluster', TC, '-o', 'jsonpath={.status.conditions}').catch(
      (e: Error) => e.message,
    );
    const hosts = await k('get', 'baremetalhosts', '-n', 'metal3', '-o', 'wide', '--show-labels').catch(
      (e: Error) => e.message,
    );
    // The operator's own account: its warnings and errors.
    const said = (operatorLog?.() ?? [])
      .filter((l) => ['warn', 'error', 'fatal'].includes(String(l.level)))
      .slice(-20)
      .map((l) => JSON.stringify(l).slice(0, 600));
    throw new Error(`${err.message}\n${conditions}\n${hosts}\n${said.join('\n')}\n${state}`);
  });

function keyPair(name: string): { key: string; pub: string } {
  const key = join(work, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key]);
  return { key, pub: readFileSync(`${key}.pub`, 'utf8').trim() };
}

describe('tenant services on real nodes', { skip, timeout: 900_000 }, () => {
  let op: OperatorProcess | undefined;
  const user = keyPair('user');
  const stranger = keyPair('stranger');
  let nodeIp = '';
  /** The stand-in API server at each host address: its pod's IP. */
  const standInAt = new Map<string, string>();

  before(async () => {
    execFileSync('bash', [join(REPO_ROOT, 'hack/build-service-images.sh'), work], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await clusterCommand(
      'up',
      '--name',
      NAME,
      '--nodes',
      '1',
      '--real-nodes',
      '2',
      '--bare-metal-hosts',
      '3',
      '--timeout',
      '3m',
    );
    for (const image of ['nodewarden-jumphost.tar', 'nodewarden-haproxy.tar'])
      await clusterCommand('load-image', '--name', NAME, join(work, image));
    const { kubectl: kubectlBin } = await controlPlaneBinaries({ quiet: true });
    await run(join(REPO_ROOT, 'hack/install-crds.sh'), [kubectlBin, 'install'], {
      cwd: REPO_ROOT,
      env: { ...process.env, KUBECONFIG: kubeconfig() },
    });
    nodeIp = (
      await k(
        'get',
        'nodes',
        '-l',
        'nodewarden.dev/real=true',
        '-o',
        'jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}',
      )
    ).trim();
    assert.match(nodeIp, /^\d+\.\d+\.\d+\.\d+$/);
  });

  after(async () => {
    await op?.stop();
    if (existsSync(kubeconfig())) await clusterCommand('delete', '--name', NAME).catch(() => {});
  });

  it("starts stand-in API servers in pods and makes them the hosts' API addresses", async () => {
    const pem = join(work, 'tls');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=apiserver-stand-in',
        '-keyout',
        `${pem}.key`,
        '-out',
        `${pem}.crt`,
      ],
      { stdio: 'ignore' },
    );
    writeFileSync(`${pem}.pem`, readFileSync(`${pem}.crt`, 'utf8') + readFileSync(`${pem}.key`, 'utf8'));
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'apiserver-stand-in', namespace: 'default' },
      stringData: { 'haproxy.cfg': STAND_IN_CONFIG, 'tls.pem': readFileSync(`${pem}.pem`, 'utf8') },
    });
    for (const name of STAND_INS) await apply(standInPod(name));
    const ready = await eventually(
      'the stand-in API servers Ready',
      async () => {
        const pods = (await json('get', 'pods', '-l', 'app=apiserver-stand-in')).items as Any[];
        const ready = pods.filter((p) =>
          p.status.conditions?.some((c: Any) => c.type === 'Ready' && c.status === 'True'),
        );
        return ready.length === STAND_INS.length ? ready : undefined;
      },
      120_000,
    );
    for (const p of ready) standInAt.set(p.status.podIP, p.metadata.name);
    const ips = [...standInAt.keys()].sort();
    // Every host's oam-ipv4 address: a stand-in's, one each.
    const hosts = ((await json('get', 'baremetalhosts', '-n', 'metal3')).items as Any[]).sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : 1,
    );
    assert.equal(hosts.length, 3);
    for (const [i, h] of hosts.entries()) {
      const secret = h.spec.networkData.name as string;
      const data = JSON.parse(
        Buffer.from(
          (await json('get', 'secret', '-n', 'metal3', secret)).data.networkData,
          'base64',
        ).toString(),
      );
      data.networks[0].ip_address = ips[i];
      await apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secret, namespace: 'metal3' },
        stringData: { networkData: JSON.stringify(data) },
      });
    }
    op = startOperator(['--controllers', 'baremetalhost,tenantcluster', '--baremetal-resync', '2s'], {
      kubeconfig: kubeconfig(),
    });
    const started = op;
    operatorLog = () => started.logs;
    await eventually(
      'every host available',
      async () => {
        const list = (await json('get', 'baremetalhosts', '-n', 'metal3')).items as Any[];
        return list.every((h) => h.status?.provisioning?.state === 'available') ? true : undefined;
      },
      120_000,
    );
  });

  it("says Unschedulable, with the scheduler's message and an Event, when no node fits the placement", async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${TC}-node-keys`, namespace: 'default' },
      stringData: { id_ed25519: readFileSync(user.key, 'utf8') },
    });
    await apply(tenantCluster({ nodeSelector: { 'nodewarden.dev/no-such-node': 'true' } }, user.pub));
    const tc = await until('ServicesRunning', 'False', 'Unschedulable');
    const c = condition(tc, 'ServicesRunning');
    assert.match(
      c.message,
      /^controlplane-lb \(edge-controlplane-lb-[a-z0-9-]+\): 0\/\d+ nodes are available: .*node affinity\/selector/,
    );
    // Each turn of the condition's reason is an Event: the scheduler's verdict is one of them
    // (an earlier one may say the pod waited for the scheduler).
    await eventually(
      "a ServiceNotRunning Event with the scheduler's message",
      async () => {
        const events = (await json('get', 'events', '--field-selector', `involvedObject.name=${TC}`))
          .items as Any[];
        return (
          events.some((e) => e.reason === 'ServiceNotRunning' && /node affinity\/selector/.test(e.message)) ||
          undefined
        );
      },
      30_000,
    );
  });

  it('runs HAProxy and the jump host Ready on the real nodes once placed there', async () => {
    const started = Date.now();
    await apply(tenantCluster({ nodeSelector: REAL }, user.pub));
    const tc = await until('ServicesRunning', 'True', 'Running');
    console.log(
      `# services running ${((Date.now() - started) / 1000).toFixed(1)} s after the placement changed`,
    );
    assert.equal(condition(tc, 'Ready').status, 'True', condition(tc, 'Ready').message);
    assert.match(
      condition(tc, 'ServicesRunning').message,
      /^controlplane-lb on real-\d+, jumphost on real-\d+$/,
    );
    await servicesRolledOut(json);
    const ready = await readyServicePods(json);
    assert.deepEqual(ready.map((p) => p.metadata.labels['app.kubernetes.io/component']).sort(), [
      'controlplane-lb',
      'jumphost',
    ]);
    for (const p of ready) assert.match(p.spec.nodeName, /^real-\d+$/);
    const images = ready.map((p) => p.status.containerStatuses[0].image).sort();
    assert.deepEqual(images, [HAPROXY_IMAGE, `localhost/nodewarden-jumphost:${NODEWARDEN_VERSION}`]);
  });

  it("balances HTTPS through HAProxy's node port over every host's API address, checked by /readyz", async () => {
    // The control-plane hosts the cluster picked, healthy (a failed one is no backend): their stand-ins, and none other, must answer.
    const held = ((await json('get', 'tenantcluster', TC)).status.hosts.ControlPlane as Any[]).filter(
      (h) => h.health === 'Healthy',
    );
    const want = held.map((h) => `ok from ${standInAt.get(h.ip)}`).sort();
    assert.equal(new Set(want).size, 2, `two hosts with a stand-in each: ${JSON.stringify(held)}`);
    // Answers gathered across tries: a try refused while HAProxy's checks still
    // mark a backend up is no answer, not a failure.
    const answers = new Set<string>();
    const seen = await eventually(
      'both stand-ins answering through the load balancer',
      async () => {
        for (let i = 0; i < 8; i++) {
          const { stdout } = await inCluster(
            'curl',
            '-sk',
            '--max-time',
            '5',
            `https://${nodeIp}:${API_NODE_PORT}/readyz`,
          ).catch(() => ({ stdout: '' }));
          if (stdout.trim()) answers.add(stdout.trim());
        }
        return answers.size >= want.length ? [...answers].sort() : undefined;
      },
      120_000,
      2000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; answers: ${[...answers].join(' | ') || 'none'}`);
    });
    assert.deepEqual(seen, want);
  });

  it("lets in the TenantCluster's key over the jump host's node port, with redfishtool and `host`, and no other key", async () => {
    const ssh = (key: string, command: string) =>
      inCluster(
        'ssh',
        '-i',
        key,
        '-p',
        String(SSH_NODE_PORT),
        '-o',
        'BatchMode=yes',
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'ConnectTimeout=10',
        `root@${nodeIp}`,
        command,
      );
    // Rolled out, one pod each: a session is never cut by a pod being replaced.
    await servicesRolledOut(json);
    // Tried again on failure: the node's kube-proxy may still send the node port to
    // the pod just replaced. The last failure is the one told.
    let failed: Error | undefined;
    const { stdout } = await eventually(
      'a session on the jump host',
      () =>
        ssh(user.key, 'redfishtool -V && host list').catch((err: Error) => {
          failed = err;
          return undefined;
        }),
      60_000,
      2000,
    ).catch(async (err: Error) => {
      if (failed) err = failed;
      // What sshd and the pod said, for a failure seen only in CI's log.
      const pods = await k('get', 'pods', '-o', 'wide').catch((e: Error) => e.message);
      const logs = await k('logs', '-l', 'app.kubernetes.io/component=jumphost', '--tail=40').catch(
        (e: Error) => e.message,
      );
      throw new Error(`${err.message}\n${pods}\n${logs}`);
    });
    assert.match(stdout, /redfishtool Version: \d/);
    // The hosts the cluster holds, each with the address its network data gives (a stand-in's).
    const held = (await json('get', 'tenantcluster', TC)).status.hosts.ControlPlane as Any[];
    assert.equal(held.length, 2);
    for (const h of held)
      assert.match(stdout, new RegExp(`^${h.name}\\s+${h.ip.replaceAll('.', '\\.')}\\s+redfish`, 'm'));
    await assert.rejects(ssh(stranger.key, 'true'), /Permission denied/);
  });
});
