import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NodeSync } from '../../../src/cluster/infra/cloud/http-api.ts';
import { CloudState } from '../../../src/cluster/infra/cloud/state.ts';
import type { KubeClient } from '../../../src/runtime/client.ts';

describe('NodeSync', () => {
  it('creates a Node when an instance is Ready and deletes it with the instance', async () => {
    const calls: string[] = [];
    const fake = {
      createIfAbsent: async (
        _t: unknown,
        obj: { metadata: { name: string }; spec: { providerID: string } },
      ) => {
        calls.push(`create ${obj.metadata.name} ${obj.spec.providerID}`);
        return true;
      },
      delete: async (_t: unknown, name: string, _ns: unknown, opts: { ignoreNotFound?: boolean }) => {
        calls.push(`delete ${name} ${opts.ignoreNotFound}`);
      },
    } as unknown as KubeClient;
    const state = new CloudState({ bootDelayMs: 10 });
    state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img', kubernetesVersion: 'v1.33.0' });
    const sync = new NodeSync(fake);
    sync.attach(state);
    const i = state.createInstance('w', 0);
    await sync.settle();
    assert.deepEqual(calls, []);
    state.tick(10);
    await sync.settle();
    state.deleteInstance(i.providerID, 20);
    await sync.stop();
    assert.deepEqual(calls, [`create ${i.nodeName} ${i.providerID}`, `delete ${i.nodeName} true`]);
  });

  it('reconciles once on start: Nodes for Ready instances that have none, none for Terminated ones', async () => {
    const calls: string[] = [];
    const existing = ['w-old', 'w-kept'];
    const fake = {
      listAll: async () => ({ items: existing.map((name) => ({ metadata: { name } })), metadata: {} }),
      createIfAbsent: async (_t: unknown, obj: { metadata: { name: string } }) => {
        calls.push(`create ${obj.metadata.name}`);
        return true;
      },
      delete: async (_t: unknown, name: string) => {
        calls.push(`delete ${name}`);
      },
    } as unknown as KubeClient;
    const state = new CloudState({ bootDelayMs: 10 });
    state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img', kubernetesVersion: 'v1.37.1' });
    const old = state.adoptInstance({ groupId: 'w', nodeName: 'w-old', zone: 'a' }, 0);
    state.adoptInstance({ groupId: 'w', nodeName: 'w-kept', zone: 'a' }, 0);
    state.adoptInstance({ groupId: 'w', nodeName: 'w-lost', zone: 'a' }, 0);
    state.deleteInstance(old.providerID, 1);
    state.createInstance('w', 0); // still booting: no Node yet
    assert.deepEqual(await new NodeSync(fake).reconcile(state), { created: 1, deleted: 1 });
    assert.deepEqual(calls, ['delete w-old', 'create w-lost']);
  });

  it('keeps registering a Ready instance whose Node could not be made (an API server restarting), as a kubelet does', async () => {
    let failures = 2;
    const created: string[] = [];
    const fake = {
      createIfAbsent: async (_t: unknown, obj: { metadata: { name: string } }) => {
        if (failures-- > 0) throw new Error('connect ECONNREFUSED');
        created.push(obj.metadata.name);
        return true;
      },
    } as unknown as KubeClient;
    const state = new CloudState({ bootDelayMs: 10 });
    state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img', kubernetesVersion: 'v1.37.1' });
    const errors: string[] = [];
    const sync = new NodeSync(fake, { retryMs: 5, onError: (e) => errors.push((e as Error).message) });
    sync.attach(state);
    const i = state.createInstance('w', 0);
    state.tick(10);
    await sync.settle();
    assert.deepEqual(created, [i.nodeName]);
    assert.equal(errors.length, 2);
  });

  it('stops registering once the instance is deleted', async () => {
    let tries = 0;
    const fake = {
      createIfAbsent: async () => {
        tries++;
        throw new Error('connect ECONNREFUSED');
      },
      delete: async () => {},
    } as unknown as KubeClient;
    const state = new CloudState({ bootDelayMs: 10 });
    state.addGroup({ id: 'w', role: 'Worker', launchImage: 'img', kubernetesVersion: 'v1.37.1' });
    const sync = new NodeSync(fake, { retryMs: 20 });
    sync.attach(state);
    const i = state.createInstance('w', 0);
    state.tick(10);
    await new Promise((r) => setTimeout(r, 30));
    state.deleteInstance(i.providerID, 20);
    await sync.settle();
    const after = tries;
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(tries, after, 'no try after the instance is gone');
    assert.ok(after >= 1);
  });
});
