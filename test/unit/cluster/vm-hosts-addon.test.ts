import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentOf, parseVmHosts, servingPort, vmHostId } from '../../../src/cluster/infra/vm-hosts/addon.ts';

describe('cluster up --vm-hosts', () => {
  it('takes a comma-separated list of node names, each once', () => {
    assert.deepEqual(parseVmHosts('worker-000, worker-001,,worker-000'), ['worker-000', 'worker-001']);
    assert.deepEqual(parseVmHosts(''), []);
  });

  it('refuses what is no node name, naming it', () => {
    assert.throws(() => parseVmHosts('worker-000,Bad_Node'), /"Bad_Node" is not a node name/);
  });

  it("gives each cluster's node a namespace of its own, the same on every call", () => {
    const a = agentOf({ dir: '/state/one/infra/vm-hosts' }, 'worker-000');
    const b = agentOf({ dir: '/state/two/infra/vm-hosts' }, 'worker-000');
    assert.notEqual(a.netns, b.netns);
    assert.equal(a.netns, `nw-vmh-${vmHostId('/state/one/infra/vm-hosts', 'worker-000')}`);
    assert.match(a.netns, /^nw-vmh-[0-9a-f]{8}$/);
    assert.equal(a.dir, '/state/one/infra/vm-hosts/worker-000');
    assert.equal(a.proc.marker, a.state);
  });

  it("keeps libvirtd's sockets within a unix socket path's 108 bytes", () => {
    const a = agentOf({ dir: `/${'deep/'.repeat(30)}infra/vm-hosts` }, 'worker-000');
    assert.ok(`${a.state}/libvirtd/sock/libvirt-admin-sock`.length < 108);
  });

  it('reads the loopback port the agent serves on from its log, for the relay to publish to pods', () => {
    const log = [
      'probing KVM…',
      'VM host agent at https://127.0.0.1:40123 (CA: /tmp/nw-vmh-1/ca.crt); guests: qemu — TCG',
      '',
    ].join('\n');
    assert.equal(servingPort(log), 40123);
    assert.equal(servingPort('probing KVM…\n'), undefined, 'not serving yet');
    assert.equal(servingPort('VM host agent at https://10.0.0.5:8000 (CA: x)'), undefined, 'not on loopback');
  });
});
