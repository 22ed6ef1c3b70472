import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseWorkloadApi, kvmOptions } from '../../../src/kvm/options.ts';

describe('--kvm-workload-api', () => {
  const table: Array<[string, Parameters<typeof chooseWorkloadApi>[0], NodeJS.ProcessEnv, string]> = [
    ['auto in a pod: the master Service', 'auto', { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, 'service'],
    ['auto on a workstation: the VM runtime writes it', 'auto', {}, 'none'],
    ['service wherever', 'service', {}, 'service'],
    ['none wherever', 'none', { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, 'none'],
  ];
  for (const [name, choice, env, want] of table)
    it(name, () => assert.equal(chooseWorkloadApi(choice, env), want));

  it('service reaches master.<id>.svc; none reaches nothing', async () => {
    const service = await kvmOptions({ 'kvm-workload-api': 'service' }, {});
    assert.deepEqual(service.masterEndpoints('c1', 443), {
      url: 'https://master.c1.svc:443',
      serverName: 'master.c1.svc',
    });
    const none = await kvmOptions({ 'kvm-workload-api': 'none' }, {});
    assert.equal(none.masterEndpoints('c1', 443), undefined);
  });

  it('refuses anything else', async () => {
    await assert.rejects(
      kvmOptions({ 'kvm-workload-api': 'dns' }, {}),
      /--kvm-workload-api: "dns" is not one of auto, service, none/,
    );
  });
});
