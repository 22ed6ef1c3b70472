import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, it } from 'node:test';
import { generateCa, issueServingCert } from '../../../src/runtime/certs.ts';
import { createLogger } from '../../../src/runtime/log.ts';
import { registry } from '../../../src/runtime/metrics.ts';
import { type AdmissionRequest, WebhookServer } from '../../../src/runtime/webhook.ts';

const quiet = createLogger({ level: 'silent' });
const caA = generateCa({ commonName: 'ca-a' });
const caB = generateCa({ commonName: 'ca-b' });
const pairFrom = (ca: typeof caA) =>
  issueServingCert(ca, { dnsNames: ['webhook.test.svc'], ips: ['127.0.0.1'] });

interface Reply {
  status: number;
  body: string;
  json: () => { apiVersion: string; kind: string; response: Record<string, unknown> };
}

function call(
  port: number,
  ca: string,
  path: string,
  o: { method?: string; body?: string | Buffer; type?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: o.method ?? 'POST',
        ca,
        agent: false, // a fresh TLS handshake every time, so a certificate swap shows
        headers: o.body === undefined ? {} : { 'content-type': o.type ?? 'application/json' },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, json: () => JSON.parse(body) }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

const review = (uid: string, object: unknown = { metadata: { name: 'x' } }) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'g', version: 'v1', kind: 'K' },
      resource: { group: 'g', version: 'v1', resource: 'ks' },
      operation: 'CREATE',
      userInfo: { username: 'alice' },
      object,
    },
  });

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get();
  const hit = m?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return hit?.value ?? 0;
}

describe('WebhookServer', () => {
  const server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    tls: pairFrom(caA),
    log: quiet,
    maxBodyBytes: 4096,
  });
  let port = 0;
  const seen: AdmissionRequest[] = [];
  before(async () => {
    server.register('/allow', (req) => {
      seen.push(req);
      return { allowed: true };
    });
    server.register('/deny', async () => ({ allowed: false, message: 'no you may not' }));
    server.register('/throw', async () => {
      throw new Error('boom');
    });
    await server.start();
    port = server.address()?.port ?? 0;
  });
  after(() => server.stop());

  it('answers an AdmissionReview over HTTPS with the request uid', async () => {
    const r = await call(port, caA.cert, '/allow', { body: review('uid-1') });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json(), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'uid-1', allowed: true },
    });
    assert.equal(seen.at(-1)?.userInfo.username, 'alice');
    assert.deepEqual(seen.at(-1)?.object, { metadata: { name: 'x' } });
  });

  it('turns a denial into status 403 Forbidden with the message', async () => {
    const r = await call(port, caA.cert, '/deny', { body: review('uid-2') });
    assert.deepEqual(r.json().response, {
      uid: 'uid-2',
      allowed: false,
      status: { code: 403, message: 'no you may not', reason: 'Forbidden' },
    });
  });

  it('turns a handler that throws into a denial with code 500', async () => {
    const r = await call(port, caA.cert, '/throw', { body: review('uid-3') });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json().response, {
      uid: 'uid-3',
      allowed: false,
      status: { code: 500, message: 'internal error: boom' },
    });
  });

  it('serves /healthz and answers 404 for a path nobody registered', async () => {
    assert.deepEqual(
      await call(port, caA.cert, '/healthz', { method: 'GET' }).then((r) => [r.status, r.body]),
      [200, 'ok'],
    );
    assert.equal((await call(port, caA.cert, '/nope', { body: review('u') })).status, 404);
  });

  it('refuses what is not a JSON AdmissionReview POST, and bodies over the limit', async () => {
    assert.equal((await call(port, caA.cert, '/allow', { method: 'GET' })).status, 405);
    assert.equal((await call(port, caA.cert, '/allow', { body: 'x', type: 'text/plain' })).status, 415);
    assert.equal((await call(port, caA.cert, '/allow', { body: '{not json' })).status, 400);
    assert.equal((await call(port, caA.cert, '/allow', { body: '{"kind":"Pod"}' })).status, 400);
    const big = review('u', { metadata: { name: 'x' }, pad: 'y'.repeat(5000) });
    assert.equal((await call(port, caA.cert, '/allow', { body: big })).status, 413);
  });

  it("counts requests and latency under controller-runtime's metric names", async () => {
    const labels = { webhook: '/deny', code: '200' };
    const before = await metricValue('controller_runtime_webhook_requests_total', labels);
    const count = async () => {
      const m = await registry.getSingleMetric('controller_runtime_webhook_latency_seconds')?.get();
      const name = 'controller_runtime_webhook_latency_seconds_count';
      return (
        m?.values.find(
          (v) => (v as { metricName?: string }).metricName === name && v.labels.webhook === '/deny',
        )?.value ?? 0
      );
    };
    const countBefore = await count();
    await call(port, caA.cert, '/deny', { body: review('m') });
    assert.equal(await metricValue('controller_runtime_webhook_requests_total', labels), before + 1);
    assert.equal(await count(), countBefore + 1);
    assert.equal((await call(port, caA.cert, '/allow', { method: 'GET' })).status, 405);
    assert.ok(
      (await metricValue('controller_runtime_webhook_requests_total', { webhook: '/allow', code: '405' })) >=
        1,
    );
  });

  it('swaps its certificate without a restart', async () => {
    server.setCertificate(pairFrom(caB));
    try {
      await assert.rejects(
        call(port, caA.cert, '/allow', { body: review('s1') }),
        /self[- ]signed|unable to verify/i,
      );
      const r = await call(port, caB.cert, '/allow', { body: review('s2') });
      assert.equal(r.json().response.uid, 's2');
      assert.equal(server.address()?.port, port);
    } finally {
      server.setCertificate(pairFrom(caA));
    }
  });
});

describe('WebhookServer lifecycle', () => {
  it('rejects a bad bind address and a port in use, and stops with a keep-alive socket open', async () => {
    await assert.rejects(
      new WebhookServer({ bindAddress: 'nope', tls: pairFrom(caA), log: quiet }).start(),
      /invalid/,
    );
    const a = new WebhookServer({ bindAddress: '127.0.0.1:0', tls: pairFrom(caA), log: quiet });
    await a.start();
    const port = a.address()?.port ?? 0;
    const b = new WebhookServer({ bindAddress: `127.0.0.1:${port}`, tls: pairFrom(caA), log: quiet });
    await assert.rejects(b.start(), /address in use/);
    const agent = new https.Agent({ keepAlive: true, ca: caA.cert });
    await new Promise<void>((resolve, reject) =>
      https
        .get({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => res.resume().on('end', resolve))
        .on('error', reject),
    );
    const started = performance.now();
    await a.stop(2_000);
    assert.ok(performance.now() - started < 1_500, 'stop did not wait for the idle keep-alive socket');
    await assert.rejects(call(port, caA.cert, '/healthz', { method: 'GET' }), /ECONNREFUSED/);
    agent.destroy();
  });
});
