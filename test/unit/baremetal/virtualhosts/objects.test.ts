import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  machineId,
  nicOwner,
  nodeOfOwner,
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
