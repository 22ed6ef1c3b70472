// The libvirt domain a VM becomes, rendered from its record: checked field by
// field, and each rendering judged by libvirt's own schema (virt-xml-validate,
// from libvirt-clients) where it is installed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { VmDefinition } from '../../../../../src/baremetal/virtualhosts/hypervisors/hypervisor.ts';
import {
  bootOrder,
  type DomainInput,
  domainXml,
  recordOf,
  sameDefinition,
} from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/domain-xml.ts';
import {
  bridgeOf,
  volumeName,
} from '../../../../../src/baremetal/virtualhosts/hypervisors/libvirt/vm-host.ts';
import { newcArchive } from '../../../../../src/qemu/initramfs.ts';
import { systemUuid } from '../../../../../src/redfish/documents.ts';

const vm = (over: Partial<VmDefinition> = {}): VmDefinition => ({
  id: 'ns-lab-n1-worker-0',
  flavor: { name: 'worker', cpus: 2, memoryMiB: 1536 },
  disks: [{ sizeGB: 10 }],
  nics: [
    { name: 'enp1s0', mac: '02:00:00:00:00:01', ip: '10.0.0.11', network: 'oam' },
    { name: 'enp2s0', mac: '02:00:00:00:01:01', ip: '10.1.0.11', network: 'pxe' },
  ],
  credentials: { username: 'admin', password: 'p<&>w' },
  ...over,
});

const input = (v: VmDefinition, over: Partial<DomainInput> = {}): DomainInput => ({
  record: { definition: v, boot: { target: 'None', enabled: 'Disabled', mode: 'Legacy' } },
  virtType: 'qemu',
  storagePool: 'nodewarden',
  volumes: v.disks.map((_, i) => volumeName(v.id, i)),
  networkOf: (nic) => `nw-${v.nics.find((n) => n.name === nic)?.network}`,
  consoleLog: `/var/lib/agent/consoles/${v.id}.log`,
  ...over,
});

const all = (xml: string, re: RegExp) => [...xml.matchAll(re)].map((m) => m[1]);

const validator = existsSync('/usr/bin/virt-xml-validate');
function validate(xml: string): void {
  if (!validator) return;
  const dir = mkdtempSync(join(tmpdir(), 'nw-domain-'));
  try {
    writeFileSync(join(dir, 'd.xml'), xml);
    execFileSync('virt-xml-validate', [join(dir, 'd.xml'), 'domain'], { stdio: 'pipe' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the domain XML of a VM', () => {
  const cases: {
    name: string;
    def: VmDefinition;
    over?: Partial<DomainInput>;
    want: Record<string, unknown>;
  }[] = [
    {
      name: 'two NICs, one disk, under software emulation',
      def: vm(),
      want: {
        type: ['qemu'],
        vcpu: ['2'],
        memory: ['1536'],
        macs: ['02:00:00:00:00:01', '02:00:00:00:01:01'],
        networks: ['nw-oam', 'nw-pxe'],
        volumes: ['ns-lab-n1-worker-0-disk0.qcow2'],
        cd: [],
      },
    },
    {
      name: 'two disks under KVM with an ISO in the CD drive',
      def: vm({
        disks: [{ sizeGB: 10 }, { sizeGB: 20 }],
        flavor: { name: 'big', cpus: 8, memoryMiB: 16384 },
      }),
      over: { virtType: 'kvm', cdFile: '/pool/x-cd.iso' },
      want: {
        type: ['kvm'],
        vcpu: ['8'],
        memory: ['16384'],
        macs: ['02:00:00:00:00:01', '02:00:00:00:01:01'],
        networks: ['nw-oam', 'nw-pxe'],
        volumes: ['ns-lab-n1-worker-0-disk0.qcow2', 'ns-lab-n1-worker-0-disk1.qcow2'],
        cd: ['/pool/x-cd.iso'],
      },
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const xml = domainXml(input(c.def, c.over));
      assert.deepEqual(
        {
          type: all(xml, /<domain type='(\w+)'/g),
          vcpu: all(xml, /<vcpu>(\d+)</g),
          memory: all(xml, /<memory unit='MiB'>(\d+)</g),
          macs: all(xml, /<mac address='([^']+)'/g),
          networks: all(xml, /<source network='([^']+)'/g),
          volumes: all(xml, /<source pool='nodewarden' volume='([^']+)'/g),
          cd: all(xml, /<source file='([^']+)'/g),
        },
        c.want,
      );
      assert.match(xml, /<disk type='file' device='cdrom'>[\s\S]*<target dev='hdc' bus='ide'\/>/);
      assert.match(xml, /<type arch='x86_64' machine='pc'>hvm<\/type>/);
      assert.match(
        xml,
        /<serial type='file'>\s*<source path='\/var\/lib\/agent\/consoles\/ns-lab-n1-worker-0\.log'\/>/,
      );
      assert.ok(xml.includes(`<uuid>${systemUuid(c.def.id)}</uuid>`), 'the Redfish System UUID');
      validate(xml);
    });

  it('carries its record in its metadata, read back as it was (password with XML characters included)', () => {
    const i = input(vm());
    assert.deepEqual(recordOf(domainXml(i)), i.record);
    // libvirt rewrites the metadata element with double quotes and its own prefix.
    const rewritten = domainXml(i).replace(
      /<nw:vm xmlns:nw='([^']+)'>/,
      '<nodewarden:vm xmlns:nodewarden="$1">',
    );
    assert.deepEqual(recordOf(rewritten), i.record);
    assert.equal(recordOf('<domain><name>theirs</name></domain>'), undefined);
  });

  it('boots a pending override first, then the disk and the CD', () => {
    const table: [Parameters<typeof bootOrder>[0], string[]][] = [
      [{ target: 'None', enabled: 'Disabled', mode: 'Legacy' }, ['hd', 'cdrom']],
      [{ target: 'Cd', enabled: 'Once', mode: 'Legacy' }, ['cdrom', 'hd']],
      [{ target: 'Pxe', enabled: 'Continuous', mode: 'UEFI' }, ['network', 'hd', 'cdrom']],
      [{ target: 'Cd', enabled: 'Disabled', mode: 'Legacy' }, ['hd', 'cdrom']],
      [{ target: 'Hdd', enabled: 'Once', mode: 'Legacy' }, ['hd', 'cdrom']],
    ];
    for (const [boot, want] of table) assert.deepEqual(bootOrder(boot), want, JSON.stringify(boot));
    const xml = domainXml({ ...input(vm()), record: { definition: vm(), boot: table[1]![0] } });
    assert.deepEqual(all(xml, /<boot dev='(\w+)'/g), ['cdrom', 'hd']);
  });

  it('tells the same definition from another', () => {
    assert.ok(sameDefinition(vm(), vm()));
    assert.ok(!sameDefinition(vm(), vm({ flavor: { name: 'worker', cpus: 4, memoryMiB: 1536 } })));
    assert.ok(!sameDefinition(vm(), vm({ nics: [vm().nics[0]!] })));
    assert.ok(!sameDefinition(vm(), vm({ credentials: { username: 'admin', password: 'other' } })));
  });

  it('names bridges within the 15 characters Linux allows, one per network', () => {
    assert.ok(bridgeOf('a-very-long-provisioning-network').length <= 15);
    assert.notEqual(bridgeOf('oam'), bridgeOf('pxe'));
  });
});

describe('the initramfs archive', () => {
  it('is newc cpio: each record 070701 and padded to 4 bytes, with the trailer last', () => {
    const a = newcArchive([{ name: 'init', mode: 0o100755, data: Buffer.from('#!/bin/sh\n') }]);
    assert.equal(a.subarray(0, 6).toString(), '070701');
    assert.equal(a.length % 4, 0);
    assert.ok(a.includes(Buffer.from('TRAILER!!!\0')));
    if (existsSync('/usr/bin/cpio')) {
      const list = execFileSync('cpio', ['-t'], { input: a, stdio: ['pipe', 'pipe', 'pipe'] });
      assert.deepEqual(list.toString().trim().split('\n'), ['init']);
    }
  });
});
