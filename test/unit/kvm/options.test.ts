import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseWorkloadApi, kvmOptions } from '../../../src/kvm/options.ts';

describe('--kvm-workload-api', () => {
  const table: Array<[string, Parameters<typeof chooseWorkloadApi>[0], 'pod' | 'host', string]> = [
    ['auto in a pod: the master Service', 'auto', 'pod', 'service'],
    ['auto on a workstation: the VM runtime writes it', 'auto', 'host', 'none'],
    ['service wherever', 'service', 'host', 'service'],
    ['none wherever', 'none', 'pod', 'none'],
  ];
  for (const [name, choice, runsIn, want] of table)
    it(name, () => assert.equal(chooseWorkloadApi(choice, runsIn), want));

  it('service reaches master.<id>.svc; none reaches nothing', async () => {
    const service = await kvmOptions({ 'kvm-workload-api': 'service' }, 'host');
    assert.deepEqual(service.masterEndpoints('c1', 443), {
      url: 'https://master.c1.svc:443',
      serverName: 'master.c1.svc',
    });
    const none = await kvmOptions({ 'kvm-workload-api': 'none' }, 'pod');
    assert.equal(none.masterEndpoints('c1', 443), undefined);
  });

  it('refuses anything else', async () => {
    await assert.rejects(
      kvmOptions({ 'kvm-workload-api': 'dns' }, 'host'),
      /--kvm-workload-api: "dns" is not one of auto, service, none/,
    );
  });
});
