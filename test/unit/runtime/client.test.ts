import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { type KubeClient as Client, KubeClient } from '../../../src/runtime/client.ts';
import { ApiError, isAlreadyExists, isConflict, isNotFound } from '../../../src/runtime/errors.ts';
import { restClientRequests } from '../../../src/runtime/metrics.ts';
import { TokenBucket } from '../../../src/runtime/ratelimit.ts';
import { ConfigMaps, type K8sObject, Leases, Pods } from '../../../src/runtime/resources.ts';
import { FakeApiServer } from './fake-apiserver.ts';

const cm = (name: string, data: Record<string, string> = {}): K8sObject => ({
  metadata: { name, namespace: 'default' },
  data,
});

describe('KubeClient', () => {
  let fake: FakeApiServer;
  let client: Client;
  beforeEach(async () => {
    fake = await FakeApiServer.start();
    client = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, retryBaseMs: 5, retryMaxMs: 20 });
  });
  afterEach(async () => {
    client.close();
    await fake.stop();
  });

  it('creates, reads, updates, lists and deletes objects as plain JSON with the bearer token', async () => {
    const created = await client.create(ConfigMaps, cm('a', { k: 'v' }));
    assert.equal(typeof created.metadata?.creationTimestamp, 'string', 'timestamps stay strings');
    const got = await client.get(ConfigMaps, 'a', 'default');
    assert.deepEqual(got.data, { k: 'v' });
    const updated = await client.update(ConfigMaps, { ...got, data: { k: 'w' } });
    assert.notEqual(updated.metadata?.resourceVersion, got.metadata?.resourceVersion);
    const list = await client.list(ConfigMaps, { namespace: 'default' });
    assert.equal(list.items.length, 1);
    assert.equal(list.items[0]?.kind, 'ConfigMap', 'list items get apiVersion/kind filled in');
    assert.equal(list.metadata.resourceVersion, String(fake.resourceVersion));
    await client.delete(ConfigMaps, 'a', 'default', { preconditions: { uid: got.metadata?.uid } });
    assert.equal(fake.get(ConfigMaps, 'a', 'default'), undefined);
    const post = fake.requests.find((r) => r.method === 'POST');
    assert.equal(post?.path, '/api/v1/namespaces/default/configmaps');
    assert.equal(post?.headers.authorization, 'Bearer t');
    assert.equal(post?.query.get('fieldManager'), 'nodewarden');
    assert.equal(fake.connections, 1, 'one keep-alive connection serves sequential requests');
    const del = fake.requests.find((r) => r.method === 'DELETE');
    assert.deepEqual(del?.body, {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { uid: got.metadata?.uid },
    });
  });

  it('updates the status subresource and addresses grouped, cluster-scoped paths', async () => {
    fake.upsert(Leases, {
      metadata: { name: 'l', namespace: 'kube-node-lease' },
      spec: { holderIdentity: 'x' },
    });
    const l = await client.get(Leases, 'l', 'kube-node-lease');
    await client.updateStatus(Leases, { ...l, status: { ok: true } });
    assert.equal(
      fake.requests.at(-1)?.path,
      '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/l/status',
    );
    await assert.rejects(client.get(ConfigMaps, 'nope', 'default'), isNotFound);
  });

  for (const [type, contentType] of [
    ['merge', 'application/merge-patch+json'],
    ['json', 'application/json-patch+json'],
    ['strategic', 'application/strategic-merge-patch+json'],
    ['apply', 'application/apply-patch+yaml'],
  ] as const) {
    it(`sends a ${type} patch as ${contentType}`, async () => {
      fake.upsert(ConfigMaps, cm('p'));
      const body = type === 'json' ? [{ op: 'add', path: '/data/x', value: '1' }] : { data: { x: '1' } };
      await client.patch(ConfigMaps, 'p', 'default', body, { type, force: true });
      const req = fake.requests.at(-1);
      assert.equal(req?.method, 'PATCH');
      assert.equal(req?.headers['content-type'], contentType);
      assert.equal(req?.query.get('fieldManager'), 'nodewarden');
      if (type === 'apply') {
        assert.equal(req?.query.get('force'), 'true');
        assert.equal(
          (req?.body as K8sObject | undefined)?.kind,
          'ConfigMap',
          'apply bodies carry apiVersion/kind',
        );
      } else {
        assert.equal(req?.query.get('force'), null, 'force is only for apply');
      }
    });
  }

  it('turns 404 and 409 into ApiError carrying the Status reason, and never retries a conflict', async () => {
    await client.create(ConfigMaps, cm('dup'));
    const err = await client.create(ConfigMaps, cm('dup')).catch((e: unknown) => e);
    assert.ok(err instanceof ApiError && isAlreadyExists(err) && err.reason === 'AlreadyExists');
    const stale = { ...cm('dup'), metadata: { name: 'dup', namespace: 'default', resourceVersion: '1' } };
    const before = fake.requests.length;
    await assert.rejects(client.update(ConfigMaps, stale), isConflict);
    assert.equal(fake.requests.length - before, 1);
    await assert.rejects(client.delete(ConfigMaps, 'gone', 'default'), isNotFound);
    await client.delete(ConfigMaps, 'gone', 'default', { ignoreNotFound: true });
  });

  it('listAll follows continue tokens across pages of one snapshot', async () => {
    for (let i = 0; i < 7; i++) fake.upsert(ConfigMaps, cm(`c${i}`));
    const all = await client.listAll(ConfigMaps, { limit: 3 });
    assert.deepEqual(
      all.items.map((o) => o.metadata?.name),
      ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'],
    );
    const lists = fake.requests.filter((r) => r.method === 'GET');
    assert.equal(lists.length, 3);
    assert.ok(lists[1]?.query.get('continue'));
  });

  it('retries a GET through 503s and counts each answer in the metrics', async () => {
    fake.upsert(ConfigMaps, cm('r'));
    const count503 = async () =>
      (await restClientRequests.get()).values.find(
        (v) => v.labels.code === '503' && v.labels.host === new URL(fake.url).host,
      )?.value ?? 0;
    fake.failNext(2, 503);
    const got = await client.get(ConfigMaps, 'r', 'default');
    assert.equal(got.metadata?.name, 'r');
    assert.equal(fake.requests.length, 3);
    assert.equal(await count503(), 2);
  });

  it('gives up after maxRetries and surfaces the last error', async () => {
    const c = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, retryBaseMs: 1, maxRetries: 2 });
    fake.failNext(10, 503);
    await assert.rejects(
      c.get(ConfigMaps, 'r', 'default'),
      (e: unknown) => e instanceof ApiError && e.statusCode === 503,
    );
    assert.equal(fake.requests.length, 3);
    c.close();
  });

  it('honours Retry-After on 429', async () => {
    fake.upsert(ConfigMaps, cm('r'));
    fake.failNext(1, 429, { retryAfter: 1 });
    const t0 = performance.now();
    await client.get(ConfigMaps, 'r', 'default');
    assert.ok(performance.now() - t0 >= 950, 'waited the server-given second');
  });

  it('does not resend a create after a 503 (the server may have acted on it)', async () => {
    fake.failNext(1, 503, { method: 'POST' });
    await assert.rejects(
      client.create(ConfigMaps, cm('once')),
      (e: unknown) => e instanceof ApiError && e.statusCode === 503,
    );
    assert.equal(fake.requests.filter((r) => r.method === 'POST').length, 1);
  });

  it('once fenced, sends no write and aborts the one under way; reads go on', async () => {
    fake.upsert(ConfigMaps, cm('f'));
    fake.blackhole = true;
    const hanging = client.update(ConfigMaps, { ...cm('f'), data: { k: 'late' } });
    const settled = hanging.then(
      () => 'resolved',
      (e: NodeJS.ErrnoException) => e.code,
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(fake.requests.length, 1, 'the write reached the server and hangs there');
    client.fenceWrites('test');
    assert.equal(await settled, 'EFENCED');
    fake.blackhole = false;
    await assert.rejects(client.create(ConfigMaps, cm('g')), /writes fenced: test/);
    await assert.rejects(client.delete(ConfigMaps, 'f', 'default'), /writes fenced/);
    assert.equal(fake.requests.length, 1, 'nothing more was sent');
    assert.equal((await client.get(ConfigMaps, 'f', 'default')).metadata?.name, 'f');
  });

  it('stops retrying a write at the fence', async () => {
    fake.upsert(ConfigMaps, cm('r'));
    const c = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, retryBaseMs: 100, retryMaxMs: 100 });
    fake.failNext(10, 503, { method: 'PUT' });
    const pending = c.update(ConfigMaps, cm('r'));
    await new Promise((r) => setTimeout(r, 30));
    c.fenceWrites('lost');
    await assert.rejects(pending, /writes fenced: lost/);
    assert.equal(fake.requests.filter((r) => r.method === 'PUT').length, 1, 'no retry after the fence');
    c.close();
  });

  it('fences a client made fencedWith another when that one is fenced, and one made after', async () => {
    fake.upsert(ConfigMaps, cm('w'));
    const follower = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, fencedWith: client });
    await follower.update(ConfigMaps, cm('w', { k: 'before' }));
    client.fenceWrites('lost');
    await assert.rejects(follower.update(ConfigMaps, cm('w', { k: 'after' })), /writes fenced: lost/);
    const later = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 0, fencedWith: client });
    await assert.rejects(later.create(ConfigMaps, cm('x')), /writes fenced: lost/);
    assert.deepEqual((await follower.get(ConfigMaps, 'w', 'default')).data, { k: 'before' });
    for (const c of [follower, later]) c.close();
  });

  it('resends a create refused at connect, since it never reached a server', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'f', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'f', user: 'u' }],
      currentContext: 'c',
    });
    const c = KubeClient.fromKubeConfig(kc, { qps: 0, retryBaseMs: 100, maxRetries: 6 });
    const pending = c.create(ConfigMaps, cm('late'));
    await new Promise((r) => setTimeout(r, 150));
    const late = await FakeApiServer.start({ port });
    try {
      const created = await pending;
      assert.equal(created.metadata?.name, 'late');
      assert.equal(late.requests.length, 1);
    } finally {
      c.close();
      await late.stop();
    }
  });

  it('evicts through policy/v1 Eviction and never retries a PDB refusal, keeping the PDB name', async () => {
    fake.upsert(Pods, { metadata: { name: 'p', namespace: 'ns' } });
    fake.evictionRefusal = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 429,
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          { reason: 'DisruptionBudget', message: 'The disruption budget web-pdb needs 2 healthy pods' },
        ],
      },
    } as typeof fake.evictionRefusal;
    const err = await client.evict('p', 'ns', { gracePeriodSeconds: 5 }).catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.statusCode, 429);
    assert.match(err.message, /web-pdb/);
    assert.equal(err.causes[0]?.reason, 'DisruptionBudget');
    assert.equal(fake.requests.length, 1, 'a 429 from eviction is the caller’s to handle');
    fake.evictionRefusal = undefined;
    await client.evict('p', 'ns', { gracePeriodSeconds: 5 });
    const req = fake.requests.at(-1);
    assert.equal(req?.path, '/api/v1/namespaces/ns/pods/p/eviction');
    assert.deepEqual(req?.body, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'p', namespace: 'ns' },
      deleteOptions: { gracePeriodSeconds: 5 },
    });
    assert.equal(fake.get(Pods, 'p', 'ns'), undefined);
  });

  it('sends impersonation headers and the user agent', async () => {
    const c = KubeClient.fromKubeConfig(fake.kubeConfig(), {
      impersonate: { user: 'jane', groups: ['a', 'b'] },
      userAgent: 'nw-test',
    });
    await c.list(Pods);
    const h = fake.requests[0]?.headers;
    assert.equal(h?.['impersonate-user'], 'jane');
    assert.equal(h?.['impersonate-group'], 'a, b');
    assert.equal(h?.['user-agent'], 'nw-test');
    c.close();
  });

  it('gets the bearer token from an exec credential plugin', async () => {
    const cred = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'from-exec' },
    });
    const kc = new KubeConfig();
    kc.loadFromString(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'f', cluster: { server: fake.url, 'insecure-skip-tls-verify': true } }],
        users: [
          {
            name: 'u',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: process.execPath,
                args: ['-e', `process.stdout.write(${JSON.stringify(cred)})`],
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'c', context: { cluster: 'f', user: 'u' } }],
        'current-context': 'c',
      }),
    );
    const c = KubeClient.fromKubeConfig(kc);
    await c.list(Pods);
    await c.list(Pods);
    assert.deepEqual(
      fake.requests.map((r) => r.headers.authorization),
      ['Bearer from-exec', 'Bearer from-exec'],
    );
    c.close();
  });

  it('spaces requests to the configured QPS once the burst is spent', async () => {
    const c = KubeClient.fromKubeConfig(fake.kubeConfig(), { qps: 20, burst: 1 });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 5 }, () => c.list(Pods)));
    assert.ok(performance.now() - t0 >= 190, '4 requests beyond the burst at 20/s take at least 200ms');
    c.close();
  });

  it('streams watch events, ends when the server closes, and ends when the signal aborts', async () => {
    fake.upsert(ConfigMaps, cm('w1'));
    const seen: string[] = [];
    const ended = (async () => {
      for await (const ev of client.watch(ConfigMaps, { resourceVersion: '1' }))
        seen.push(`${ev.type} ${ev.object.metadata?.name}`);
    })();
    while (fake.openWatches === 0) await new Promise((r) => setTimeout(r, 5));
    fake.upsert(ConfigMaps, cm('w2'));
    await new Promise((r) => setTimeout(r, 30));
    fake.endWatches();
    await ended;
    assert.deepEqual(seen, ['ADDED w1', 'ADDED w2']);
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 50);
    for await (const _ of client.watch(ConfigMaps, {
      resourceVersion: String(fake.resourceVersion),
      signal: ctl.signal,
    })) {
      assert.fail('no events expected');
    }
  });
});

describe('TokenBucket', () => {
  it('lets a burst through at once, then one token per 1/qps', async () => {
    const b = new TokenBucket(10, 2);
    const t0 = performance.now();
    await b.take();
    await b.take();
    assert.ok(performance.now() - t0 < 30);
    await b.take();
    assert.ok(performance.now() - t0 >= 90);
  });

  it('is unlimited at qps <= 0 and rejects a waiter whose signal aborts', async () => {
    const free = new TokenBucket(0, 1);
    for (let i = 0; i < 1000; i++) await free.take();
    const b = new TokenBucket(1, 1);
    await b.take();
    await assert.rejects(b.take(AbortSignal.timeout(20)));
  });
});

describe('KubeClient over TLS with client certificates (kwokctl-style kubeconfig)', () => {
  let dir: string;
  let fake: FakeApiServer;
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nw-tls-'));
    openssl(
      ...'req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.crt'.split(
        ' ',
      ),
    );
    const issue = (name: string, subj: string, ext: string) => {
      openssl(
        ...`req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj ${subj} -keyout ${name}.key -out ${name}.csr`.split(
          ' ',
        ),
      );
      writeFileSync(join(dir, `${name}.ext`), ext);
      openssl(
        ...`x509 -req -in ${name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile ${name}.ext -out ${name}.crt`.split(
          ' ',
        ),
      );
    };
    issue('server', '/CN=kube-apiserver', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    issue('admin', '/O=system:masters/CN=kwok-admin', 'extendedKeyUsage=clientAuth\n');
    const f = (n: string) => readFileSync(join(dir, n));
    fake = await FakeApiServer.start({
      tls: { key: f('server.key'), cert: f('server.crt'), ca: f('ca.crt') },
    });
  });
  after(async () => {
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubeconfig = (user: string) => `apiVersion: v1
kind: Config
clusters:
- name: kwok
  cluster:
    server: ${fake.url}
    certificate-authority: ${join(dir, 'ca.crt')}
users:
- name: admin
  user:
${user}
contexts:
- name: kwok
  context: {cluster: kwok, user: admin}
current-context: kwok
`;

  it('verifies the server against the CA and presents the client certificate', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      kubeconfig(
        `    client-certificate: ${join(dir, 'admin.crt')}\n    client-key: ${join(dir, 'admin.key')}`,
      ),
    );
    const c = KubeClient.fromKubeConfig(kc);
    fake.upsert(Pods, { metadata: { name: 'tls', namespace: 'default' } });
    const pod = await c.get(Pods, 'tls', 'default');
    await c.get(Pods, 'tls', 'default');
    assert.equal(pod.metadata?.name, 'tls');
    assert.equal(fake.requests.at(-1)?.clientCN, 'kwok-admin');
    assert.equal(fake.connections, 1, 'the TLS connection is kept alive and reused');
    c.close();
  });

  it('fails without a client certificate, and does not retry forever', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig('    token: t'));
    const c = KubeClient.fromKubeConfig(kc, { retryBaseMs: 1, maxRetries: 1 });
    const err = await c.get(Pods, 'tls', 'default').catch((e: unknown) => e);
    assert.ok(err instanceof Error && !(err instanceof ApiError), `a TLS handshake failure, got ${err}`);
    c.close();
  });
});
