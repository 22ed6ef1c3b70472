// The libvirt Redfish backend against a fake VM host: what a domain looks
// like as a Redfish System, and which libvirt action each ResetType is.
// (The real thing, against libvirtd, is test/integration/vmhosts-libvirt.test.ts.)
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { baremetalOptions } from '../../../../../src/baremetal/options.ts';
import {
  advertisedHost,
  certificateNames,
  definitionProblem,
  listenOrStandBy,
} from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/agent.ts';
import type { VmRecord } from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/domain-xml.ts';
import {
  libvirtBackend,
  systemOf,
} from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/redfish-backend.ts';
import type { LibvirtVmHost } from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/vm-host.ts';
import { hypervisorSource } from '../../../../../src/baremetal/virtualhosts/setup.ts';
import { RESET_TYPES, RedfishBackendError } from '../../../../../src/redfish/backend.ts';
import { generateCa, issueServingCert } from '../../../../../src/runtime/x509.ts';

const record: VmRecord = {
  definition: {
    id: 'ns-lab-n1-worker-0',
    flavor: { name: 'worker', cpus: 2, memoryMiB: 2048 },
    disks: [{ sizeGB: 10 }],
    nics: [{ name: 'enp1s0', mac: '02:00:00:00:00:01', ip: '10.0.0.11', network: 'oam' }],
    credentials: { username: 'admin', password: 'pw' },
  },
  boot: { target: 'None', enabled: 'Disabled', mode: 'Legacy' },
};

function fakeHost(running: boolean) {
  const calls: string[] = [];
  const host = {
    virtType: 'qemu',
    get: async (id: string) => (id === record.definition.id ? { record, running } : undefined),
    list: async () => [{ record, running }],
    powerOn: async (id: string) => void calls.push(`start ${id}`),
    powerOff: async (id: string, graceful: boolean) =>
      void calls.push(`${graceful ? 'shutdown' : 'destroy'} ${id}`),
    restart: async (id: string) => void calls.push(`reset ${id}`),
    setBoot: async (_id: string, boot: VmRecord['boot']) => ({ ...record, boot }),
    insertMedia: async (id: string, image: string, file: string, bytes: number) =>
      void calls.push(`insert ${id} ${image} ${bytes} ${readFileSync(file, 'utf8')}`),
  };
  return { host: host as unknown as LibvirtVmHost, calls };
}

describe('a libvirt domain as a Redfish System', () => {
  it('has the flavor, the NICs with their MACs, the power libvirt reads and the engine it runs on', () => {
    const s = systemOf({ record, running: true }, 'qemu');
    assert.deepEqual(
      [s.spec.cpus, s.spec.memoryMiB, s.spec.diskGB, s.spec.nics, s.power, s.model],
      [
        2,
        2048,
        10,
        [{ name: 'enp1s0', mac: '02:00:00:00:00:01', ip: '10.0.0.11' }],
        'On',
        'libvirt domain (QEMU TCG)',
      ],
    );
    assert.equal(systemOf({ record, running: false }, 'kvm').power, 'Off');
    assert.equal(
      systemOf({ record: { ...record, media: 'http://x/live.iso' }, running: false }, 'kvm').virtualMedia,
      'http://x/live.iso',
    );
  });

  it('maps each ResetType to start, destroy, ACPI shutdown or reset', async () => {
    const want: Record<string, string> = {
      On: 'start',
      ForceOff: 'destroy',
      GracefulShutdown: 'shutdown',
      GracefulRestart: 'reset',
      ForceRestart: 'reset',
    };
    for (const type of RESET_TYPES) {
      const { host, calls } = fakeHost(true);
      await libvirtBackend(host).reset(record.definition.id, type);
      assert.deepEqual(calls, [`${want[type]} ${record.definition.id}`], type);
    }
  });

  it('sets a boot override once when no duration is given, and refuses an unknown target with 400', async () => {
    const { host } = fakeHost(false);
    const b = libvirtBackend(host);
    const s = await b.setBoot(record.definition.id, { target: 'Cd' });
    assert.deepEqual([s.boot.target, s.boot.enabled], ['Cd', 'Once']);
    await assert.rejects(
      b.setBoot(record.definition.id, { target: 'Floppy' }),
      (e: unknown) => e instanceof RedfishBackendError && e.status === 400,
    );
    await assert.rejects(
      b.setBoot('nope', { target: 'Cd' }),
      (e: unknown) => e instanceof RedfishBackendError && e.status === 404,
    );
  });

  it('fetches an image over HTTP and hands the host the file to upload', async () => {
    const server = createServer((_req, res) => res.end('an ISO'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/live.iso`;
      const { host, calls } = fakeHost(true);
      await libvirtBackend(host).insertMedia(record.definition.id, url);
      assert.deepEqual(calls, [`insert ${record.definition.id} ${url} 6 an ISO`]);
    } finally {
      server.close();
    }
  });

  it('refuses an image that is not a URL it can fetch with 400', async () => {
    const { host } = fakeHost(false);
    for (const image of ['not a url', 'ftp://images.example/live.iso'])
      await assert.rejects(
        libvirtBackend(host).insertMedia(record.definition.id, image),
        (e: unknown) => e instanceof RedfishBackendError && e.status === 400,
        image,
      );
  });
});

describe('--vm-hypervisors', () => {
  it('takes auto, libvirt or simulated, auto by default, and refuses anything else', async () => {
    assert.equal((await baremetalOptions({})).vmHypervisors, 'auto');
    assert.equal((await baremetalOptions({ 'vm-hypervisors': 'libvirt' })).vmHypervisors, 'libvirt');
    await assert.rejects(
      baremetalOptions({ 'vm-hypervisors': 'vmware' }),
      /not one of auto, libvirt, simulated/,
    );
  });

  it('names what it looks for, and why there is none', () => {
    const client = {} as never;
    assert.equal(hypervisorSource(client, 'libvirt').name, 'the VM host agents');
    assert.equal(hypervisorSource(client, 'simulated').name, 'the BMC fleet');
    assert.match(
      hypervisorSource(client, 'auto').missing,
      /nodewarden-vm-host-agents.*nodewarden-simulated-bmc/,
    );
  });

  it('runs the agent in the pools’ DaemonSets while none is found, except for the simulated fleet', () => {
    const client = {} as never;
    assert.deepEqual(hypervisorSource(client, 'simulated').agentWhenNone, { kind: 'pause' });
    assert.deepEqual(hypervisorSource(client, 'libvirt', 'example/nw:1').agentWhenNone, {
      kind: 'vm-host-agent',
      image: 'example/nw:1',
    });
    assert.deepEqual(hypervisorSource(client, 'auto').agentWhenNone, {
      kind: 'vm-host-agent',
      image: 'nodewarden:latest',
    });
  });
});

describe('--vm-host-libvirt-dir', () => {
  it("is /run/libvirt by default, and reaches the agents' DaemonSets", async () => {
    assert.equal((await baremetalOptions({})).vmHostLibvirtDir, '/run/libvirt');
    const dir = '/tmp/lv/$(NODE_NAME)/sock';
    assert.equal((await baremetalOptions({ 'vm-host-libvirt-dir': dir })).vmHostLibvirtDir, dir);
    assert.deepEqual(hypervisorSource({} as never, 'libvirt', 'nw:1', dir).agentWhenNone, {
      kind: 'vm-host-agent',
      image: 'nw:1',
      libvirtDir: dir,
    });
  });

  it('refuses a relative folder, or one whose first component is the node', async () => {
    for (const bad of ['run/libvirt', '/$(NODE_NAME)/sock'])
      await assert.rejects(baremetalOptions({ 'vm-host-libvirt-dir': bad }), /--vm-host-libvirt-dir/, bad);
  });
});

describe("the agent's address", () => {
  const table: [string, string][] = [
    ['127.0.0.1:0', '127.0.0.1'],
    ['10.1.2.3:8000', '10.1.2.3'],
    [':8000', '127.0.0.1'],
    ['0.0.0.0:8000', '127.0.0.1'],
    ['[fd00::5]:8000', 'fd00::5'],
    ['fd00::5:8000', 'fd00::5'],
  ];
  for (const [listen, want] of table)
    it(`is ${want} when it listens on ${listen}`, () => assert.equal(advertisedHost(listen), want));
});

describe("the agent's certificate", () => {
  it('names loopback, the advertised address and every address it is also reached at, IPs apart from names', () => {
    assert.deepEqual(certificateNames('127.0.0.1', ['172.30.0.1']), {
      ips: ['127.0.0.1', '172.30.0.1'],
      dnsNames: ['localhost'],
    });
    assert.deepEqual(certificateNames('10.1.2.3', ['fd00::5', 'vmh.example', '10.1.2.3']), {
      ips: ['127.0.0.1', '10.1.2.3', 'fd00::5'],
      dnsNames: ['localhost', 'vmh.example'],
    });
  });

  it('is one a client dialling the relay address accepts, and one dialling another address refuses', () => {
    const ca = generateCa({ commonName: 'test' });
    const cert = new X509Certificate(
      issueServingCert(ca, certificateNames('127.0.0.1', ['172.30.0.1'])).cert,
    );
    const peer = { subjectaltname: cert.subjectAltName ?? '' } as PeerCertificate;
    assert.equal(checkServerIdentity('172.30.0.1', peer), undefined);
    assert.equal(checkServerIdentity('127.0.0.1', peer), undefined);
    assert.ok(checkServerIdentity('172.30.0.2', peer) instanceof Error);
  });
});

describe("a second pool's agent on a node whose port another agent holds", () => {
  it('stands by, saying so once, and serves once the holder lets go', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const at = `127.0.0.1:${(holder.address() as AddressInfo).port}`;
    const said: string[] = [];
    const standby = createServer((_, res) => res.end('standby'));
    const bound = listenOrStandBy(standby, at, (m) => said.push(m), 20);
    await sleep(150);
    assert.equal(said.length, 1);
    assert.match(said[0]!, /is held by another process .*standing by until it is free/);
    assert.equal(standby.listening, false);
    await new Promise((r) => holder.close(r));
    assert.equal((await bound).port, Number(at.split(':')[1]));
    assert.equal(await (await fetch(`http://${at}/`)).text(), 'standby');
    assert.equal(said.length, 1);
    await new Promise((r) => standby.close(r));
  });

  it('fails at once on any other error', async () => {
    await assert.rejects(
      listenOrStandBy(createServer(), '203.0.113.9:1', () => assert.fail('stood by'), 20),
      /cannot serve the VM host agent/,
    );
  });
});

describe('the agent refuses a definition libvirt would choke on, naming the field', () => {
  const good = record.definition;
  const table: [string, unknown, RegExp | undefined][] = [
    ['a good one', good, undefined],
    ['an id that is no DNS label', { ...good, id: 'Bad_Id' }, /^id:/],
    ['no memory', { ...good, flavor: { name: 'x', cpus: 1, memoryMiB: 0 } }, /^flavor:/],
    ['no disk', { ...good, disks: [] }, /^disks:/],
    ['an upper-case MAC', { ...good, nics: [{ name: 'e', mac: '02:00:00:00:00:AA' }] }, /^nics:/],
    ['no credentials', { ...good, credentials: undefined }, /^credentials:/],
  ];
  for (const [name, vm, want] of table)
    it(name, () => {
      const got = definitionProblem(vm as never);
      if (want) assert.match(got ?? '', want);
      else assert.equal(got, undefined);
    });
});
