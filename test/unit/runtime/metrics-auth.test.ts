// The /metrics filter against a stand-in API server that answers TokenReview
// and SubjectAccessReview: who gets 401, 403, 200, what is asked, and that
// answers are reused for a while and then asked again. The real API server's
// side is in test/integration/metrics-auth.test.ts.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { metricsServing } from '../../../src/operator/cli.ts';
import { KubeClient } from '../../../src/runtime/client.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { MetricsAuthFilter } from '../../../src/runtime/metrics-auth.ts';

const log = createLogger({ level: 'silent' });

interface Review {
  path: string;
  body: { spec: Record<string, unknown> };
}

/** Tokens it knows (token → user), users allowed to get /metrics, and every review it was asked. */
class FakeReviewer {
  readonly reviews: Review[] = [];
  readonly tokens = new Map<string, { username: string; groups: string[] }>();
  readonly allowed = new Set<string>();
  failWith: number | undefined;
  private readonly server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => {
      raw += d;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as Review['body'];
      this.reviews.push({ path: req.url ?? '', body });
      if (this.failWith) {
        res.writeHead(this.failWith, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: this.failWith, message: 'boom' }));
        return;
      }
      let status: unknown;
      if (req.url?.startsWith('/apis/authentication.k8s.io/v1/tokenreviews')) {
        const user = this.tokens.get(String(body.spec.token));
        status = user ? { authenticated: true, user } : { authenticated: false, error: 'token not known' };
      } else {
        const attrs = body.spec.nonResourceAttributes as { path: string; verb: string };
        status = {
          allowed:
            this.allowed.has(String(body.spec.user)) && attrs.path === '/metrics' && attrs.verb === 'get',
        };
      }
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...body, status }));
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }

  count(kind: 'tokenreviews' | 'subjectaccessreviews'): number {
    return this.reviews.filter((r) => r.path.includes(kind)).length;
  }
}

describe('MetricsAuthFilter', () => {
  const fake = new FakeReviewer();
  let client: KubeClient;
  let clock = 0;
  let filter: MetricsAuthFilter;

  before(async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: await fake.start(), skipTLSVerify: true }],
      users: [{ name: 'operator', token: 'operator-token' }],
      contexts: [{ name: 'c', cluster: 'fake', user: 'operator' }],
      currentContext: 'c',
    });
    client = KubeClient.fromKubeConfig(kc, { qps: 0, maxRetries: 0 });
    fake.tokens.set('reader-token', { username: 'system:serviceaccount:mon:prometheus', groups: ['g'] });
    fake.tokens.set('other-token', { username: 'someone', groups: [] });
    fake.allowed.add('system:serviceaccount:mon:prometheus');
  });
  after(async () => {
    client.close();
    await fake.stop();
  });
  beforeEach(() => {
    fake.reviews.length = 0;
    fake.failWith = undefined;
    clock = 1_000_000;
    filter = new MetricsAuthFilter(client, { cacheTtlMs: 5_000, now: () => clock, log });
  });

  const cases: { name: string; header: string | undefined; code: number; reviews: number }[] = [
    { name: 'no Authorization header', header: undefined, code: 401, reviews: 0 },
    { name: 'a Basic credential', header: 'Basic dXNlcjpwdw==', code: 401, reviews: 0 },
    { name: 'an empty bearer token', header: 'Bearer ', code: 401, reviews: 0 },
    { name: 'a token the API server does not know', header: 'Bearer forged', code: 401, reviews: 1 },
    { name: 'a known user without the right', header: 'Bearer other-token', code: 403, reviews: 2 },
    { name: 'a known user with the right', header: 'Bearer reader-token', code: 200, reviews: 2 },
  ];
  for (const c of cases) {
    it(`answers ${c.code} to ${c.name}`, async () => {
      const v = await filter.check(c.header, 'GET', '/metrics');
      assert.equal(v.allowed ? 200 : v.code, c.code);
      assert.equal(fake.reviews.length, c.reviews);
    });
  }

  it('asks the TokenReview for the token, then a SubjectAccessReview for get on the path as that user', async () => {
    await filter.check('Bearer reader-token', 'GET', '/metrics');
    const [tr, sar] = fake.reviews;
    assert.equal(tr?.path.split('?')[0], '/apis/authentication.k8s.io/v1/tokenreviews');
    assert.equal(tr?.body.spec.token, 'reader-token');
    assert.equal(sar?.path.split('?')[0], '/apis/authorization.k8s.io/v1/subjectaccessreviews');
    assert.deepEqual(sar?.body.spec, {
      user: 'system:serviceaccount:mon:prometheus',
      groups: ['g'],
      nonResourceAttributes: { path: '/metrics', verb: 'get' },
    });
  });

  it('maps a POST to the create verb, which the reader is not granted', async () => {
    const v = await filter.check('Bearer reader-token', 'POST', '/metrics');
    assert.deepEqual(v, {
      allowed: false,
      code: 403,
      message: 'Forbidden: user "system:serviceaccount:mon:prometheus" may not create path "/metrics"',
    });
  });

  it('reuses answers within the TTL and asks again after it', async () => {
    for (let i = 0; i < 5; i++) {
      assert.equal((await filter.check('Bearer reader-token', 'GET', '/metrics')).allowed, true);
      assert.equal((await filter.check('Bearer forged', 'GET', '/metrics')).allowed, false);
      clock += 900;
    }
    assert.equal(fake.count('tokenreviews'), 2);
    assert.equal(fake.count('subjectaccessreviews'), 1);
    clock += 1_000;
    await filter.check('Bearer reader-token', 'GET', '/metrics');
    assert.equal(fake.count('tokenreviews'), 3);
    assert.equal(fake.count('subjectaccessreviews'), 2);
  });

  it('sees a right revoked once the TTL has passed', async () => {
    const f = new MetricsAuthFilter(client, { cacheTtlMs: 5_000, now: () => clock, log });
    fake.allowed.add('someone');
    assert.equal((await f.check('Bearer other-token', 'GET', '/metrics')).allowed, true);
    fake.allowed.delete('someone');
    assert.equal((await f.check('Bearer other-token', 'GET', '/metrics')).allowed, true);
    clock += 5_001;
    assert.equal((await f.check('Bearer other-token', 'GET', '/metrics')).allowed, false);
  });

  it('answers 500 when the API server cannot review, and does not keep that answer', async () => {
    fake.failWith = 500;
    const v = await filter.check('Bearer reader-token', 'GET', '/metrics');
    assert.equal(v.allowed ? 200 : v.code, 500);
    fake.failWith = undefined;
    assert.equal((await filter.check('Bearer reader-token', 'GET', '/metrics')).allowed, true);
  });

  it('keeps at most maxEntries answers, so random tokens cannot grow memory', async () => {
    const f = new MetricsAuthFilter(client, { cacheTtlMs: 60_000, maxEntries: 3, now: () => clock, log });
    for (let i = 0; i < 5; i++) await f.check(`Bearer random-${i}`, 'GET', '/metrics');
    fake.reviews.length = 0;
    await f.check('Bearer random-4', 'GET', '/metrics'); // kept
    await f.check('Bearer random-0', 'GET', '/metrics'); // pushed out
    assert.equal(fake.count('tokenreviews'), 1);
  });
});

describe('how /metrics is served (metricsServing)', () => {
  const cases: {
    name: string;
    given: Parameters<typeof metricsServing>[0];
    inCluster: boolean;
    want: ReturnType<typeof metricsServing> | RegExp;
  }[] = [
    {
      name: 'in a pod: HTTPS on :8443',
      given: {},
      inCluster: true,
      want: { address: ':8443', secure: true },
    },
    {
      name: 'out of cluster: plain HTTP on loopback',
      given: {},
      inCluster: false,
      want: { address: '127.0.0.1:8080', secure: false },
    },
    {
      name: 'out of cluster, asked for HTTPS: on loopback :8443',
      given: { secure: true },
      inCluster: false,
      want: { address: '127.0.0.1:8443', secure: true },
    },
    {
      name: 'in a pod, asked for plain HTTP: :8080',
      given: { insecure: true },
      inCluster: true,
      want: { address: ':8080', secure: false },
    },
    {
      name: 'a given address and directory',
      given: { address: ':9000', certDir: '/certs' },
      inCluster: true,
      want: { address: ':9000', secure: true, certDir: '/certs' },
    },
    { name: 'both flags', given: { secure: true, insecure: true }, inCluster: true, want: /conflict/ },
    {
      name: 'a certificate directory for plain HTTP',
      given: { certDir: '/c' },
      inCluster: false,
      want: /needs --metrics-secure/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      if (c.want instanceof RegExp) assert.throws(() => metricsServing(c.given, c.inCluster), c.want);
      else assert.deepEqual(metricsServing(c.given, c.inCluster), { certDir: undefined, ...c.want });
    });
  }
});
