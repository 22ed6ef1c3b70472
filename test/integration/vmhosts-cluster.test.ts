// Real VM hosts as `cluster up --vm-hosts` makes them: for the node named,
// and only it, a VM host agent with a libvirtd of its own in a network
// namespace the cluster made, published under the node's name, its certificate
// naming the gateway where pods on real nodes reach it; a VM defined
// through it is a real QEMU guest in that namespace, powered over Redfish;
// and `cluster delete` leaves no domain, volume, process, namespace or
// folder. Skips, saying why, only where libvirt cannot run.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import type { V1Secret } from '@kubernetes/client-node';
import {
  AGENTS_NAMESPACE,
  AGENTS_SECRET,
} from '../../src/baremetal/virtualhosts/hypervisors/libvirt/agent-protocol.ts';
import { LibvirtHypervisors } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/hypervisors.ts';
import { libvirtdMissing } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/libvirtd.ts';
import { Virsh } from '../../src/baremetal/virtualhosts/hypervisors/libvirt/virsh.ts';
import { infraDir } from '../../src/cluster/control-plane.ts';
import { parsePools } from '../../src/cluster/fleet.ts';
import { agentOf, VM_HOSTS_FLAG, vmHostsAddon } from '../../src/cluster/infra/vm-hosts/addon.ts';
import { LocalClusters } from '../../src/cluster/local-cluster.ts';
import { CLUSTER_GATEWAY } from '../../src/cluster/real-nodes/layout.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Secrets } from '../../src/runtime/resources.ts';

const exec = (command: string, args: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile(command, args, (err, out) => (err ? reject(err) : resolve(out))),
  );

const NAME = 'nwtest-vmhosts';
const HOST = 'hv-000';
const OTHER = 'hv-001';

const skip = await libvirtdMissing();
if (skip) console.log(`# vmhosts-cluster: skipped: ${skip}`);

/** Processes whose command line names a path under `dir` (QEMU guests when `qemu`). */
function processesUnder(dir: string, qemu = false): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
        return cmd.includes(`${dir}/`) && (!qemu || cmd.includes('qemu-system'));
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('cluster up --vm-hosts', { skip }, () => {
  let clusters: LocalClusters;
  let client: KubeClient;
  let agent: ReturnType<typeof agentOf>;
  let published: Record<string, string> = {};

  before(
    async () => {
      clusters = await LocalClusters.open({ quiet: true, infrastructure: [vmHostsAddon] });
      const t = Date.now();
      const info = await clusters.up({
        name: NAME,
        pools: parsePools('hv=2'),
        infraFlags: { [VM_HOSTS_FLAG]: HOST },
      });
      console.log(`# cluster up with a VM host: ${((Date.now() - t) / 1000).toFixed(1)} s`);
      assert.ok(info);
      agent = agentOf({ dir: infraDir(NAME, vmHostsAddon.name) }, HOST);
      client = KubeClient.fromKubeConfig(clusters.kubeConfig(NAME));
      const secret = await client.get<V1Secret>(Secrets, AGENTS_SECRET, AGENTS_NAMESPACE);
      published = Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
      );
    },
    { timeout: 600_000 },
  );

  after(
    async () => {
      client?.close();
      await clusters?.delete(NAME).catch(() => {});
    },
    { timeout: 300_000 },
  );

  it('publishes an agent for the node named, and for no other', () => {
    assert.deepEqual(Object.keys(published), [HOST]);
    assert.ok(!existsSync(agentOf({ dir: infraDir(NAME, vmHostsAddon.name) }, OTHER).dir));
    const record = JSON.parse(published[HOST]!) as { endpoint: string; caCert: string; token: string };
    assert.match(record.endpoint, /^https:\/\/127\.0\.0\.1:\d+$/, 'on loopback');
    assert.match(record.caCert, /BEGIN CERTIFICATE/);
    assert.ok(record.token.length >= 32);
  });

  it("serves a certificate pods on real nodes accept at the cluster's gateway, where the relay publishes it", async () => {
    const record = JSON.parse(published[HOST]!) as { endpoint: string; caCert: string };
    const names = await new Promise<string[]>((resolve, reject) => {
      const u = new URL(record.endpoint);
      const checked: string[] = [];
      const socket = tlsConnect(
        {
          host: u.hostname,
          port: Number(u.port),
          ca: record.caCert,
          // Verified as a pod dials it (the gateway), and as the host does (loopback).
          checkServerIdentity: (_, cert) => {
            for (const at of [CLUSTER_GATEWAY, '127.0.0.1']) {
              const err = checkServerIdentity(at, cert);
              if (err) return err;
              checked.push(at);
            }
            return undefined;
          },
        },
        () => {
          socket.end();
          resolve(checked);
        },
      );
      socket.on('error', reject);
    });
    assert.deepEqual(names, [CLUSTER_GATEWAY, '127.0.0.1']);
  });

  it("keeps the node's libvirtd in a network namespace the cluster made", async () => {
    assert.ok(existsSync(`/run/netns/${agent.netns}`), `${agent.netns} exists`);
    const pid = Number(readFileSync(`${agent.state}/libvirtd/libvirtd.pid`, 'utf8'));
    assert.notEqual(
      await exec('readlink', [`/proc/${pid}/ns/net`]),
      await exec('readlink', ['/proc/self/ns/net']),
    );
  });

  it('defines a VM through it as a libvirt domain, which Redfish powers on as a QEMU guest', async () => {
    const hv = new LibvirtHypervisors(published).of(HOST);
    const held = await hv.define({
      id: 'vm-a',
      flavor: { name: 'tiny', cpus: 1, memoryMiB: 128 },
      disks: [{ sizeGB: 1 }],
      nics: [{ name: 'enp1s0', mac: '02:00:00:bb:00:01', ip: '10.7.0.5', network: 'oam' }],
      credentials: { username: 'admin', password: 'pw' },
    });
    const system = held.redfishAddress.replace(/^redfish:/, 'https:');
    const res = await fetchInsecure(`${system}/Actions/ComputerSystem.Reset`, 'admin', 'pw', {
      ResetType: 'On',
    });
    assert.ok(res < 300, `Reset answered ${res}`);
    const virsh = new Virsh(`qemu:///system?socket=${agent.state}/libvirtd/sock/libvirt-sock`);
    assert.equal((await virsh.run(['domstate', 'vm-a'])).trim(), 'running');
    assert.equal(processesUnder(agent.state, true).length, 1, 'one QEMU guest runs');
    assert.equal((await hv.list()).length, 1);
    // The VM's bridge is in the namespace, not in the host's.
    const bridge = /nwbr-[0-9a-f]{8}/.exec(await exec('ip', ['-n', agent.netns, '-o', 'link']))?.[0];
    assert.ok(bridge, 'a bridge in the namespace');
    assert.doesNotMatch(await exec('ip', ['-o', 'link']), new RegExp(`${bridge}:`));
  });

  it('is gone with the cluster: no domain, volume, process, namespace or folder', async () => {
    await clusters.delete(NAME);
    assert.ok(!existsSync(`/run/netns/${agent.netns}`), 'the namespace is gone');
    assert.deepEqual(processesUnder(agent.state), [], 'no guest, agent, libvirtd or virtlogd runs');
    assert.ok(!existsSync(agent.state), 'the state folder, with its volumes, is gone');
    assert.ok(!existsSync(agent.dir), "the add-on's folder is gone");
    assert.ok(!clusters.exists(NAME));
  });
});

/** A Redfish POST with basic auth to the agent's self-signed certificate (as metal3 is told to accept it). */
async function fetchInsecure(url: string, user: string, password: string, body: unknown): Promise<number> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const req = request(url, {
      method: 'POST',
      rejectUnauthorized: false,
      auth: `${user}:${password}`,
      headers: { 'content-type': 'application/json', 'content-length': String(payload.length) },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
