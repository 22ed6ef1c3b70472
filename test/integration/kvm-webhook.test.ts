// The KVMCluster webhook behind the real API server: our WebhookServer in this
// process on 127.0.0.1 with self-minted certificates, and a
// ValidatingWebhookConfiguration that sends it only objects labelled for
// this run. What CEL cannot see is refused at admission with a message that
// says what to fix: an id taken in another namespace, a VNI or NodePort in
// use by another cluster, an update replacing every master at once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type KVMCluster, type KVMClusterSpecType, KVMClusters } from '../../src/api/kvm.ts';
import { kvmClusterAdmission } from '../../src/kvm/webhook.ts';
import { KVM_WEBHOOK_NAME, KVM_WEBHOOK_PATH } from '../../src/kvm/webhook-endpoint.ts';
import { SharedCache } from '../../src/runtime/cache.ts';
import { generateCa, issueServingCert } from '../../src/runtime/certs.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Namespaces, ValidatingWebhookConfigurations } from '../../src/runtime/resources.ts';
import { WebhookServer } from '../../src/runtime/webhook.ts';
import { registerLocalWebhooks } from '../../src/runtime/webhook-config.ts';
import { eventually, testKubeConfig } from '../harness/cluster.ts';

const KC = KVMClusters.type;
const RUN = randomBytes(4).toString('hex');
const LABEL = 'nodewarden.dev/test-webhook';
const CONFIG = `nwtest-kvm-webhook-${RUN}`;
const NS = [`kvmwh-a-${RUN}`, `kvmwh-b-${RUN}`];

async function rejection(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  throw new Error('the server accepted it');
}

const spec = (vni: number, over: Partial<KVMClusterSpecType> = {}): KVMClusterSpecType => ({
  masters: [{ id: 'm1', cpus: 1, memory: '1G' }],
  workers: [{ id: 'w1', cpus: 1, memory: '1G' }],
  release: { version: '20.1.0', kubernetesVersion: 'v1.37.1', osVersion: '4230.2.0' },
  network: { vni },
  api: { domain: 'api.example.com' },
  ...over,
});

describe('the KVMCluster webhook through a real API server', () => {
  const client = KubeClient.fromKubeConfig(testKubeConfig());
  const cache = new SharedCache(client);
  const ca = generateCa();
  const server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    tls: issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }),
    log: createLogger({ level: 'silent' }),
  });
  const make = (ns: string, name: string, s: KVMClusterSpecType): KVMCluster =>
    KVMClusters.make({ name, namespace: ns, labels: { [LABEL]: RUN } }, s);
  const create = (k: KVMCluster, dryRun = false) => client.create(KC, k as never, { dryRun });
  const seen = (ns: string, name: string) =>
    eventually(`${ns}/${name} in the webhook's cache`, async () =>
      cache
        .list<KVMCluster & { kind: string }>(KC)
        .some((c) => c.metadata.namespace === ns && c.metadata.name === name)
        ? true
        : undefined,
    );

  before(async () => {
    for (const ns of NS)
      await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    server.register(KVM_WEBHOOK_PATH, kvmClusterAdmission(cache));
    cache.start();
    await cache.waitForSync();
    await server.start();
    await registerLocalWebhooks(
      client,
      {
        name: CONFIG,
        url: `https://127.0.0.1:${server.address()?.port}`,
        caPem: ca.cert,
        objectSelector: { matchLabels: { [LABEL]: RUN } },
      },
      [
        {
          name: KVM_WEBHOOK_NAME,
          path: KVM_WEBHOOK_PATH,
          rules: [
            {
              apiGroups: [KC.group],
              apiVersions: [KC.version],
              operations: ['CREATE', 'UPDATE'],
              resources: [KC.plural],
              scope: 'Namespaced',
            },
          ],
        },
      ],
    );
    await create(
      make(NS[0]!, 'alpha', spec(700, { portMappings: [{ name: 'http', targetPort: 80, nodePort: 31777 }] })),
    );
    await seen(NS[0]!, 'alpha');
    await eventually('the API server to call the webhook', async () => {
      const msg = await rejection(create(make(NS[1]!, 'alpha', spec(701)), true));
      if (!msg.includes('is taken by the KVMCluster')) throw new Error(msg);
      return true;
    });
  });

  after(async () => {
    await client.delete(ValidatingWebhookConfigurations, CONFIG, undefined, { ignoreNotFound: true });
    for (const ns of NS) await client.delete(Namespaces, ns, undefined, { ignoreNotFound: true });
    await server.stop();
    await cache.stop();
    client.close();
  });

  it('refuses a cluster id taken in another namespace, naming where', async () => {
    const msg = await rejection(create(make(NS[1]!, 'alpha', spec(702))));
    assert.match(msg, new RegExp(`cluster id "alpha" is taken by the KVMCluster in namespace ${NS[0]}`));
  });

  it('refuses a VNI another cluster uses', async () => {
    const msg = await rejection(create(make(NS[1]!, 'beta', spec(700))));
    assert.match(
      msg,
      new RegExp(`spec\\.network\\.vni: 700 is in use by cluster ${NS[0]}/alpha; pick a free VNI`),
    );
  });

  it("refuses another cluster's NodePort", async () => {
    const msg = await rejection(
      create(
        make(
          NS[1]!,
          'beta',
          spec(703, { portMappings: [{ name: 'web', targetPort: 8080, nodePort: 31777 }] }),
        ),
      ),
    );
    assert.match(msg, /spec\.portMappings\[web\]\.nodePort: 31777 is used by cluster/);
  });

  it('refuses an update that would replace every master at once, and allows one that keeps one', async () => {
    const msg = await rejection(
      client.patch(
        KC,
        'alpha',
        NS[0],
        { spec: { masters: [{ id: 'm2', cpus: 1, memory: '1G' }] } },
        { type: 'merge' },
      ),
    );
    assert.match(msg, /spec\.masters: every master \(m1\) would be replaced at once/);
    await client.patch(
      KC,
      'alpha',
      NS[0],
      {
        spec: {
          masters: [
            { id: 'm1', cpus: 1, memory: '1G' },
            { id: 'm2', cpus: 1, memory: '1G' },
            { id: 'm3', cpus: 1, memory: '1G' },
          ],
        },
      },
      { type: 'merge', dryRun: true },
    );
  });

  it('admits a cluster that clashes with nothing', async () => {
    const made = await create(make(NS[1]!, 'gamma', spec(704)), true);
    assert.equal((made as KVMCluster).spec.network.vni, 704);
  });
});
