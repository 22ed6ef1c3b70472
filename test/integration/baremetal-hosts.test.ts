// The BareMetalHost controller against the run's simulated BMC fleet (Redfish
// over HTTPS, per-machine credentials) and the real API server: registration
// with bad then fixed credentials, inspection equal to the simulated hardware,
// power kept on spec.online, power switched at the BMC noticed and corrected
// within a resync, provisioning by virtual media and back (an image checked
// against its checksum first), BMC faults reported
// as metal3's error types, and deletion. Then the fleet taught to behave as
// BMCs we did not write: Systems redirected to their UUID, a certificate not
// trusted, a fixed Secret noticed at once, a busy drive under the System.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { V1Secret } from '@kubernetes/client-node';
import { type BareMetalHost, BareMetalHosts } from '../../src/api/baremetal.ts';
import { redfishAddress } from '../../src/baremetal/redfish/address.ts';
import { RedfishClient } from '../../src/baremetal/redfish/client.ts';
import { type ConsoleTarget, consoleRequest } from '../../src/cluster/infra/bmc/api.ts';
import { consolePaths, type Machine, type MachineSpec } from '../../src/cluster/infra/bmc/protocol.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isNotFound } from '../../src/runtime/errors.ts';
import { Secrets } from '../../src/runtime/resources.ts';
import { clusterFleet } from '../harness/bmc-fleet.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { type OperatorProcess, startOperator } from '../harness/operator.ts';

const T = BareMetalHosts.type;
const client = KubeClient.fromKubeConfig(testKubeConfig());
const RUN = Date.now().toString(36);
/** Long enough for one resync (2 s) and the correction after it, with room for a busy machine. */
const WITHIN_A_RESYNC_MS = 15_000;

const machine = (i: number): MachineSpec => ({
  id: `hosttest-${RUN}-${i}`,
  kind: 'physical',
  rack: 'r9',
  cpus: 8 + i * 4,
  memoryMiB: 16_384 * (i + 1),
  diskGB: 200,
  nics: [
    { name: 'eno1', mac: `52:54:00:9${i}:00:01`, ip: `198.18.9.${10 + i}` },
    { name: 'eno2', mac: `52:54:00:9${i}:00:02` },
  ],
  credentials: { username: 'admin', password: `secret-${i}` },
});

describe('BareMetalHost controller over Redfish', () => {
  const ns = useNamespace('bmh');
  let fleet: ConsoleTarget;
  let op: OperatorProcess;
  const machines = [
    machine(0),
    machine(1),
    machine(2),
    machine(3),
    machine(4),
    machine(5),
    machine(6),
    machine(7),
    machine(8),
  ];

  const bmc = (path: string, method = 'GET', body?: unknown) => consoleRequest(fleet, method, path, body);
  const machineNow = (id: string) => bmc(consolePaths.machine(id)) as Promise<Machine>;
  const host = (name: string) => client.get<BareMetalHost>(T, name, ns());
  const until = <V>(what: string, check: (h: BareMetalHost) => V | undefined, name: string, ms = 30_000) =>
    eventually(what, async () => check(await host(name)), ms);

  async function secret(name: string, username: string, password: string): Promise<void> {
    const body: V1Secret = { metadata: { name, namespace: ns() }, stringData: { username, password } };
    try {
      await client.create(Secrets, body as never);
    } catch {
      await client.patch(Secrets, name, ns(), { stringData: { username, password } }, { type: 'merge' });
    }
  }

  async function createHost(m: Machine, extra: Partial<BareMetalHost['spec']> = {}): Promise<void> {
    const obj = BareMetalHosts.make(
      { name: m.id, namespace: ns() },
      {
        online: true,
        bootMACAddress: m.nics[0]!.mac,
        bmc: { address: m.bmcAddress, credentialsName: `${m.id}-bmc`, disableCertificateVerification: true },
        ...extra,
      },
    );
    await client.create(T, obj as never);
  }

  before(async () => {
    fleet = await clusterFleet(client);
    for (const m of machines) await bmc(consolePaths.machines, 'POST', m);
    op = startOperator(['--controllers', 'baremetalhost', '--baremetal-resync', '2s']);
  });

  after(async () => {
    await bmc(consolePaths.faults, 'PUT', {
      unreachable: [],
      badCredentials: [],
      failPower: [],
      vanished: [],
      redirectToUuid: [],
      mediaUnderSystem: [],
      refuseBusyInsert: [],
    });
    for (const m of machines) {
      await client.delete(T, m.id, ns()).catch(() => {});
    }
    // The operator removes its finalizers; only then may it stop.
    for (const m of machines) {
      await eventually(`${m.id} is deleted`, async () => {
        try {
          await host(m.id);
          return undefined;
        } catch (err) {
          if (isNotFound(err)) return true;
          throw err;
        }
      });
      await bmc(consolePaths.machine(m.id), 'DELETE').catch(() => {});
    }
    await op.stop();
    client.close();
  });

  it('registers with bad credentials as a registration error naming the refusal, then with fixed ones', async () => {
    const m = (await machineNow(machines[0]!.id)) as Machine;
    await secret(`${m.id}-bmc`, 'admin', 'wrong');
    await createHost(m);
    const failed = await until('a registration error', (h) => (h.status?.errorType ? h : undefined), m.id);
    assert.equal(failed.status?.errorType, 'registration error');
    assert.equal(failed.status?.operationalStatus, 'error');
    assert.match(failed.status?.errorMessage ?? '', /refused the credentials \(HTTP 401\)/);
    assert.equal(failed.status?.goodCredentials, undefined);

    await secret(`${m.id}-bmc`, 'admin', 'secret-0');
    const ok = await until(
      'available',
      (h) => (h.status?.provisioning?.state === 'available' && h.status.poweredOn ? h : undefined),
      m.id,
    );
    assert.equal(ok.status?.errorType, undefined);
    assert.equal(ok.status?.operationalStatus, 'OK');
    assert.equal(ok.status?.goodCredentials?.credentials?.name, `${m.id}-bmc`);
  });

  it('finds by inspection the hardware the machine has', async () => {
    const m = machines[0]!;
    const h = await host(m.id);
    assert.equal(h.status?.hardware?.cpu?.count, m.cpus);
    assert.equal(h.status?.hardware?.ramMebibytes, m.memoryMiB);
    assert.deepEqual(
      h.status?.hardware?.nics?.map((n) => [n.mac, n.ip]),
      m.nics.map((n) => [n.mac, n.ip]),
    );
  });

  it('keeps the power on spec.online, and notices and corrects power switched at the BMC', async () => {
    const id = machines[0]!.id;
    assert.equal((await machineNow(id)).power, 'On');
    await bmc(consolePaths.power(id), 'POST', { power: 'Off' });
    await eventually(
      'powered on again',
      async () => ((await machineNow(id)).power === 'On' ? true : undefined),
      WITHIN_A_RESYNC_MS,
    );
    // The Event is written after the power is set, by the recorder's queue: it may trail by a moment.
    await eventually('a PowerDrift Event', async () => {
      const events = await client.list<{ reason?: string; regarding?: { name?: string } }>(
        { group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true },
        { namespace: ns() },
      );
      return events.items.some((e) => e.reason === 'PowerDrift' && e.regarding?.name === id)
        ? true
        : undefined;
    });

    await client.patch(T, id, ns(), { spec: { online: false } }, { type: 'merge' });
    await eventually('off', async () => ((await machineNow(id)).power === 'Off' ? true : undefined));
    await until('poweredOn false', (h) => (h.status?.poweredOn === false ? true : undefined), id);
  });

  it('provisions an image by virtual media, and deprovisions when it is removed', async () => {
    const id = machines[0]!.id;
    const url = 'http://images.example/nwos-1.2.0.iso';
    await client.patch(T, id, ns(), { spec: { online: true, image: { url } } }, { type: 'merge' });
    const h = await until(
      'provisioned',
      (o) => (o.status?.provisioning?.state === 'provisioned' ? o : undefined),
      id,
    );
    assert.equal(h.status?.provisioning?.image?.url, url);
    const m = await machineNow(id);
    assert.equal(m.virtualMedia, url);
    assert.equal(m.power, 'On');

    await client.patch(T, id, ns(), { spec: { image: null } }, { type: 'merge' });
    await until(
      'available again',
      (o) => (o.status?.provisioning?.state === 'available' ? o : undefined),
      id,
    );
    const after = await machineNow(id);
    assert.equal(after.virtualMedia, undefined);
    assert.equal(after.power, 'Off');
  });

  it('reports a power action the BMC fails as a power management error, and recovers', async () => {
    const m = await machineNow(machines[1]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-1');
    await bmc(consolePaths.faults, 'PUT', { failPower: [m.id] });
    await bmc(consolePaths.power(m.id), 'POST', { power: 'Off' });
    await createHost(m);
    const failed = await until('a power error', (h) => (h.status?.errorType ? h : undefined), m.id);
    assert.equal(failed.status?.errorType, 'power management error');
    assert.equal(failed.status?.provisioning?.state, 'available');
    await bmc(consolePaths.faults, 'PUT', { failPower: [] });
    await until('powered on', (h) => (h.status?.poweredOn && !h.status.errorType ? true : undefined), m.id);
    assert.equal((await machineNow(m.id)).power, 'On');
  });

  it('says when a BMC does not answer, and registers once it does', async () => {
    const m = await machineNow(machines[2]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-2');
    await bmc(consolePaths.faults, 'PUT', { unreachable: [m.id] });
    await createHost(m);
    const failed = await until('unreachable', (h) => (h.status?.errorType ? h : undefined), m.id);
    assert.equal(failed.status?.errorType, 'registration error');
    assert.match(failed.status?.errorMessage ?? '', /unreachable/);
    await bmc(consolePaths.faults, 'PUT', { unreachable: [] });
    // The retry backs off (2 s, 4 s, …): the first retries may still meet the fault.
    await until(
      'available',
      (h) => (h.status?.provisioning?.state === 'available' ? true : undefined),
      m.id,
      60_000,
    );
  });

  it('refuses an address in a form it does not speak, saying which it does', async () => {
    const name = `ipmi-${RUN}`;
    await secret(`${name}-bmc`, 'a', 'b');
    const obj = BareMetalHosts.make(
      { name, namespace: ns() },
      { online: true, bmc: { address: 'ipmi://10.0.0.1:623', credentialsName: `${name}-bmc` } },
    );
    await client.create(T, obj as never);
    const h = await until('refused', (o) => (o.status?.errorType ? o : undefined), name);
    assert.equal(h.status?.errorType, 'registration error');
    assert.match(h.status?.errorMessage ?? '', /scheme "ipmi" is not supported: nodewarden speaks Redfish/);
    await client.delete(T, name, ns());
  });

  it('follows a System redirected by name to its UUID, as sushy-tools answers, to available and powered on', async () => {
    const m = await machineNow(machines[3]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-3');
    await bmc(consolePaths.faults, 'PUT', { redirectToUuid: [m.id] });
    await createHost(m);
    const h = await until(
      'available and on',
      (o) => (o.status?.provisioning?.state === 'available' && o.status.poweredOn ? o : undefined),
      m.id,
    );
    assert.equal(h.status?.errorType, undefined);
    assert.equal((await machineNow(m.id)).power, 'On');
  });

  it('reports a certificate it does not trust as such, not as an unreachable BMC', async () => {
    const m = await machineNow(machines[4]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-4');
    await createHost(m, {
      bmc: { address: m.bmcAddress, credentialsName: `${m.id}-bmc`, disableCertificateVerification: false },
    });
    const h = await until('a certificate error', (o) => (o.status?.errorType ? o : undefined), m.id);
    assert.equal(h.status?.errorType, 'registration error');
    assert.match(h.status?.errorMessage ?? '', /answered, but its TLS certificate was refused: [A-Z_]+/);
    assert.doesNotMatch(h.status?.errorMessage ?? '', /unreachable/);
  });

  it('notices a fixed credentials Secret at once, not when the error backoff runs out', async () => {
    const m = await machineNow(machines[5]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'wrong');
    await createHost(m);
    // Four failures in: the next retry is 16 s away.
    await until('four failures', (o) => ((o.status?.errorCount ?? 0) >= 4 ? o : undefined), m.id, 60_000);
    await secret(`${m.id}-bmc`, 'admin', 'secret-5');
    await until(
      'available well before the backoff ends',
      (o) => (o.status?.provisioning?.state === 'available' ? o : undefined),
      m.id,
      10_000,
    );
  });

  it('finds the drive under the System, ejects what is in it, and provisions; reads processors and disks', async () => {
    const m = await machineNow(machines[6]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-6');
    await bmc(consolePaths.faults, 'PUT', { mediaUnderSystem: [m.id], refuseBusyInsert: [m.id] });
    const redfish = new RedfishClient({
      address: redfishAddress(m.bmcAddress),
      credentials: m.credentials,
      insecure: true,
    });
    await redfish.insertMedia(await redfish.system(), 'http://images.example/left-behind.iso');
    const url = 'http://images.example/nwos-live.iso';
    await createHost(m, { image: { url, format: 'live-iso' } });
    const h = await until(
      'provisioned',
      (o) => (o.status?.provisioning?.state === 'provisioned' ? o : undefined),
      m.id,
    );
    assert.equal((await machineNow(m.id)).virtualMedia, url);
    assert.equal(h.status?.hardware?.cpu?.arch, 'x86_64');
    assert.ok(h.status?.hardware?.cpu?.model);
    assert.deepEqual(
      h.status?.hardware?.storage?.map((d) => (d as { sizeBytes?: number }).sizeBytes),
      [m.diskGB * 1_000_000_000],
    );
  });

  it('verifies the checksum before the BMC is given the image: a wrong one is a provisioning error, the right one boots it', async () => {
    const m = await machineNow(machines[8]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-8');
    const iso = Buffer.from(`nwos live ${RUN}\n`.repeat(4096));
    const server = createServer((_req, res) => res.end(iso));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/nwos-live.iso`;
      const right = createHash('sha256').update(iso).digest('hex');
      const wrong = createHash('sha256').update('another image').digest('hex');
      await createHost(m, { image: { url, format: 'live-iso', checksum: wrong, checksumType: 'sha256' } });
      const refused = await until('refused', (o) => (o.status?.errorType ? o : undefined), m.id);
      assert.equal(refused.status?.errorType, 'provisioning error');
      assert.match(
        refused.status?.errorMessage ?? '',
        new RegExp(`sha256 is ${right}, the checksum says ${wrong}`),
      );
      assert.equal((await machineNow(m.id)).virtualMedia, undefined, 'the BMC was not given it');
      await client.patch(
        T,
        m.id,
        ns(),
        { spec: { image: { url, format: 'live-iso', checksum: right } } },
        {
          type: 'merge',
        },
      );
      await until(
        'provisioned',
        (o) => (o.status?.provisioning?.state === 'provisioned' ? o : undefined),
        m.id,
        120_000,
      );
      assert.equal((await machineNow(m.id)).virtualMedia, url);
    } finally {
      server.close();
    }
  });

  it('refuses a disk image, saying it needs Ironic, and boots a live ISO once the spec says so', async () => {
    const m = await machineNow(machines[7]!.id);
    await secret(`${m.id}-bmc`, 'admin', 'secret-7');
    await createHost(m, { image: { url: 'http://images.example/os.qcow2', format: 'qcow2' } });
    const refused = await until('refused', (o) => (o.status?.errorType ? o : undefined), m.id);
    assert.equal(refused.status?.errorType, 'provisioning error');
    assert.match(refused.status?.errorMessage ?? '', /writing images to disk needs Ironic \(metal3\)/);
    assert.equal((await machineNow(m.id)).virtualMedia, undefined);
    const url = 'http://images.example/live.iso';
    await client.patch(T, m.id, ns(), { spec: { image: { url, format: 'live-iso' } } }, { type: 'merge' });
    await until(
      'provisioned',
      (o) => (o.status?.provisioning?.state === 'provisioned' ? o : undefined),
      m.id,
    );
    const after = await machineNow(m.id);
    assert.equal(after.virtualMedia, url);
    assert.equal(after.lastBootTarget, 'Cd');
  });
});
