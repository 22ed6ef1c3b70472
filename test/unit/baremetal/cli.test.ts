import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BareMetalHost } from '../../../src/api/baremetal.ts';
import { hardwareText, hostsTable, powerText } from '../../../src/baremetal/cli.ts';

const host = (over: Partial<BareMetalHost> & { name?: string } = {}): BareMetalHost => ({
  apiVersion: 'metal3.io/v1alpha1',
  kind: 'BareMetalHost',
  metadata: {
    name: over.name ?? 'bm-r0-00',
    namespace: 'metal3',
    labels: { 'topology.nodewarden.dev/rack': 'r0' },
  },
  spec: { online: true, ...over.spec },
  ...(over.status ? { status: over.status } : {}),
});

describe('nodewarden baremetal hosts', () => {
  it('spells the hardware out as inspection found it', () => {
    const h = host({
      status: { hardware: { cpu: { count: 16 }, ramMebibytes: 65536, nics: [{ mac: 'a' }, { mac: 'b' }] } },
    });
    assert.equal(hardwareText(h), '16 CPU, 64 GiB, 2 NICs');
    assert.equal(hardwareText(host()), '-');
  });

  it('shows power as it is, and where it is going while it differs from spec.online', () => {
    assert.equal(powerText(host({ status: { poweredOn: true } })), 'on');
    assert.equal(powerText(host({ spec: { online: false }, status: { poweredOn: true } })), 'on → off');
    assert.equal(powerText(host()), '? → on');
  });

  it('lists rack, state, the claiming cluster and the error', () => {
    const claimed = host({
      name: 'bm-r0-01',
      status: { provisioning: { state: 'available' }, poweredOn: true },
    });
    claimed.metadata.labels = {
      ...claimed.metadata.labels,
      'baremetal.nodewarden.dev/cluster-name': 'tenant-a',
    };
    const broken = host({
      name: 'bm-r0-02',
      status: {
        provisioning: { state: 'registering' },
        errorType: 'registration error',
        errorMessage: 'HTTP 401',
      },
    });
    const lines = hostsTable([claimed, broken], false).trimEnd().split('\n');
    assert.match(lines[0]!, /^HOST\s+RACK\s+STATE\s+POWER\s+HARDWARE\s+CLAIMED BY\s+ERROR$/);
    assert.match(lines[1]!, /^bm-r0-01\s+r0\s+available\s+on\s+-\s+tenant-a/);
    assert.match(lines[2]!, /^bm-r0-02\s+r0\s+registering\s+\? → on\s+-\s+-\s+registration error: HTTP 401$/);
  });
});
