// The NodeMaintenance webhook behind the real API server: our WebhookServer
// runs in this process on 127.0.0.1 with self-minted certificates, and a
// ValidatingWebhookConfiguration (url clientConfig, caBundle) sends it only
// objects labelled for this run, so no other suite is ever judged by it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Maintenance, type NodeMaintenance, NodeMaintenances } from '../../src/api/maintenance.ts';
import {
  NODE_MAINTENANCE_WEBHOOK_PATH,
  type Node,
  nodeMaintenanceWebhook,
  registerLocalWebhook,
} from '../../src/maintenance/webhook.ts';
import { SharedCache } from '../../src/runtime/cache.ts';
import { generateCa, issueServingCert } from '../../src/runtime/certs.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { isReady } from '../../src/runtime/conditions.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Nodes, ValidatingWebhookConfigurations } from '../../src/runtime/resources.ts';
import { WebhookServer } from '../../src/runtime/webhook.ts';
import { eventually, testKubeConfig } from '../harness/cluster.ts';

const NM = NodeMaintenances.type;
const RUN = randomBytes(4).toString('hex');
const LABEL = 'nodewarden.dev/test-webhook';
const CONFIG = `nwtest-maintenance-webhook-${RUN}`;

/** The API server's message for a rejected request. */
async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('the server accepted it');
}

describe('the NodeMaintenance webhook through a real API server', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  const cache = new SharedCache(client);
  const ca = generateCa();
  const server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    tls: issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
    log: createLogger({ level: 'silent' }),
  });
  const operations: string[] = [];
  let seq = 0;

  const make = (nodeName: string, labelled = true): NodeMaintenance =>
    NodeMaintenances.make(
      { name: `nwtest-wh-${RUN}-${++seq}`, labels: labelled ? { [LABEL]: RUN } : {} },
      { nodeName, reason: 'webhook test' },
    );
  const create = (obj: NodeMaintenance, dryRun = false) => client.create(NM, obj, { dryRun });
  before(async () => {
    const handler = nodeMaintenanceWebhook(cache);
    server.register(NODE_MAINTENANCE_WEBHOOK_PATH, (req) => {
      operations.push(req.operation);
      return handler(req);
    });
    cache.start();
    await cache.waitForSync();
    await server.start();
    await registerLocalWebhook(client, {
      name: CONFIG,
      url: `https://127.0.0.1:${server.address()?.port}`,
      caPem: ca.cert,
      objectSelector: { matchLabels: { [LABEL]: RUN } },
    });
    // The API server picks the configuration up asynchronously: wait until it calls us.
    await eventually('the API server to call the webhook', async () => {
      const msg = await rejection(create(make('nwtest-no-such-node'), true));
      if (!msg.includes('no node with name')) throw new Error(msg);
      return true;
    });
  });

  after(async () => {
    // A failurePolicy Fail webhook left pointing at a dead server would break later suites: remove it first.
    await client.delete(ValidatingWebhookConfigurations, CONFIG, undefined, { ignoreNotFound: true });
    const mine = await client.list<NodeMaintenance>(NM, { labelSelector: `${LABEL}=${RUN}` });
    for (const m of mine.items)
      await client.delete(NM, m.metadata.name ?? '', undefined, { ignoreNotFound: true });
    await server.stop();
    await cache.stop();
    client.close();
  });

  it('starts from three healthy control-plane nodes none of which is in maintenance', () => {
    const cp = cache
      .list<Node>(Nodes)
      .filter((n) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] !== undefined);
    assert.deepEqual(cp.map((n) => n.metadata?.name).sort(), ['cp-000', 'cp-001', 'cp-002']);
    const busy = cache.list<NodeMaintenance>(NM).map((m) => m.spec.nodeName);
    assert.deepEqual(
      cp
        .filter((n) => n.spec?.unschedulable || busy.includes(n.metadata?.name ?? ''))
        .map((n) => n.metadata?.name),
      [],
    );
  });

  it('rejects a NodeMaintenance for a node that does not exist, with the reason', async () => {
    const msg = await rejection(create(make('nwtest-missing-node')));
    assert.match(msg, /denied the request: invalid nodeName, no node with name nwtest-missing-node found/);
  });

  it('leaves objects without the run label alone', async () => {
    const made = await create(make('nwtest-missing-node', false), true); // dry run: nothing stored
    assert.equal(made.spec.nodeName, 'nwtest-missing-node');
  });

  it('allows a worker, then rejects a second NodeMaintenance for it sent right after', async () => {
    await create(make('worker-000')); // no wait for the cache: the webhook remembers what it admitted
    const msg = await rejection(create(make('worker-000')));
    assert.match(msg, /invalid nodeName, a NodeMaintenance for node worker-000 already exists/);
  });

  it('allows the first control-plane node and rejects the second: quorum of 2 out of 3', async () => {
    await create(make('cp-000'));
    const msg = await rejection(create(make('cp-001')));
    assert.match(
      msg,
      /cannot put control-plane node cp-001 into maintenance: it would leave 1 of 3 control-plane nodes healthy, below the quorum of 2/,
    );
  });

  it('lets the second go when a Ready control-plane heir replaces it: the cluster counted without it (#24)', async () => {
    // cp-000 is in maintenance (above). A fourth control-plane node, made Ready by kwok, is
    // cp-001's heir: once cp-001 leaves, cp-001's heir and cp-002 are 2 of 3, a majority.
    const heir = `nwtest-heir-${RUN}`;
    await client.create(Nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: heir,
        labels: { 'kubernetes.io/hostname': heir, 'node-role.kubernetes.io/control-plane': '' },
        annotations: { 'kwok.x-k8s.io/node': 'fake' },
      },
      status: {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      },
    });
    try {
      await eventually("the heir Ready in the webhook's cache", async () =>
        cache.list<Node>(Nodes).some((n) => n.metadata?.name === heir && isReady(n)) ? true : undefined,
      );
      const replacing = (by: string) => {
        const obj = make('cp-001');
        obj.metadata.annotations = { [Maintenance.replacedByAnnotation]: by };
        return obj;
      };
      // Without the heir it is 1 of 4 below the quorum of 3; naming an existing node that is
      // no healthy heir changes nothing; naming the Ready heir lets it through (dry runs: the
      // webhook is asked, nothing is stored).
      assert.match(await rejection(create(make('cp-001'), true)), /leave 2 of 4 .* below the quorum of 3/);
      assert.match(
        await rejection(create(replacing('worker-002'), true)),
        /its heir worker-002 is not a healthy/,
      );
      const admitted = await create(replacing(heir), true);
      assert.equal(admitted.spec.nodeName, 'cp-001');
    } finally {
      await client.delete(Nodes, heir, undefined, { ignoreNotFound: true });
    }
  });

  it('rejects a nodeName change and lets other updates through the webhook', async () => {
    const obj = await create(make('worker-001'));
    const name = obj.metadata.name ?? '';
    const msg = await rejection(
      client.patch(NM, name, undefined, { spec: { nodeName: 'worker-002' } }, { type: 'merge' }),
    );
    // The CRD's CEL rule answers before validating webhooks are called; either way nodeName is named.
    assert.match(msg, /nodeName/);
    const before = operations.filter((o) => o === 'UPDATE').length;
    const updated = await client.patch<NodeMaintenance>(
      NM,
      name,
      undefined,
      { spec: { reason: 'new disk' } },
      { type: 'merge' },
    );
    assert.equal(updated.spec.reason, 'new disk');
    assert.equal(operations.filter((o) => o === 'UPDATE').length, before + 1);
  });

  it('rejects a podSelector that does not parse, saying what to fix, and stores nothing', async () => {
    const obj = make('worker-003');
    obj.spec.podSelector = 'app in ((';
    const msg = await rejection(create(obj));
    assert.match(
      msg,
      /denied the request: invalid NodeMaintenance: spec\.podSelector: podSelector "app in \(\(" is not a label selector: .*; write it as kubectl -l takes it, e\.g\. "app=web"/,
    );
    const stored = await client.get(NM, obj.metadata.name ?? '').then(
      () => 'stored',
      (err: { statusCode?: number }) => err.statusCode,
    );
    assert.equal(stored, 404, 'the refused object was not stored');
  });

  it('rejects an update that breaks the selector, keeping the object as it was', async () => {
    const obj = make('worker-004');
    obj.spec.podSelector = 'app=web';
    const name = (await create(obj)).metadata.name ?? '';
    const msg = await rejection(
      client.patch(NM, name, undefined, { spec: { podSelector: 'app=web,' } }, { type: 'merge' }),
    );
    assert.match(msg, /spec\.podSelector: podSelector "app=web," is not a label selector: empty requirement/);
    assert.equal((await client.get<NodeMaintenance>(NM, name)).spec.podSelector, 'app=web');
  });
});
