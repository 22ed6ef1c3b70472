// Secure /metrics against the real API server: a ServiceAccount token bound to
// the shipped metrics-reader ClusterRole reads it, one without gets 403, no or
// a forged token 401, and the probes stay open to the kubelet.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { PolicyRule } from '../../src/manifests/rbac.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { generateCa, issueServingCert } from '../../src/runtime/x509.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
import { startOperator } from '../harness/operator.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  ServiceAccounts,
  serviceAccountWithClusterRole,
} from '../harness/rbac.ts';

const quiet = createLogger({ level: 'silent' });
// The role a user binds to their scraper, as shipped (the chart renders the same rules).
const metricsReader = parse(readFileSync('config/rbac/metrics_reader_role.yaml', 'utf8')) as {
  rules: PolicyRule[];
};

/** GET over TLS; without `ca` the certificate (the operator's own self-signed one) is not verified. */
function get(
  port: number,
  path: string,
  token?: string,
  ca?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path,
        ...(ca ? { ca, servername: 'localhost' } : { rejectUnauthorized: false }),
        headers: token ? { authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
}

async function tokenFor(admin: KubeClient, namespace: string, sa: string): Promise<string> {
  const r = await admin.request<{ status: { token: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${sa}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } },
  });
  return r.status.token;
}

describe('/metrics served securely', () => {
  const ns = useNamespace('metrics-auth');
  const id = Date.now().toString(36);
  const role = `metrics-reader-${id}`;
  const stop = new AbortController();
  const admin = KubeClient.fromKubeConfig(testKubeConfig());
  let mgr: Manager;
  let running: Promise<void>;
  let readerToken = '';
  let strangerToken = '';

  before(async () => {
    await serviceAccountWithClusterRole(admin, ns(), 'prometheus', role, metricsReader.rules);
    await admin.create(ServiceAccounts, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'stranger', namespace: ns() },
    });
    readerToken = await tokenFor(admin, ns(), 'prometheus');
    strangerToken = await tokenFor(admin, ns(), 'stranger');
    mgr = new Manager({
      kubeConfig: testKubeConfig(),
      metricsBindAddress: '127.0.0.1:0',
      metricsSecure: {},
      healthProbeBindAddress: '127.0.0.1:0',
      log: quiet,
    });
    running = mgr.start(stop.signal);
    await eventually('both servers bound', async () =>
      mgr.address('metrics') && mgr.address('health') ? true : undefined,
    );
  });

  after(async () => {
    stop.abort();
    await running;
    await admin.delete(ClusterRoleBindings, role).catch(() => {});
    await admin.delete(ClusterRoles, role).catch(() => {});
    admin.close();
  });

  const port = () => mgr.address('metrics')!.port;

  it('serves a token bound to metrics-reader (200, Prometheus text)', async () => {
    const r = await get(port(), '/metrics', readerToken);
    assert.equal(r.status, 200, r.body);
    assert.match(r.body, /^# TYPE process_cpu_user_seconds_total counter$/m);
  });

  it('refuses a valid token without the role with 403, naming the user', async () => {
    const r = await get(port(), '/metrics', strangerToken);
    assert.equal(r.status, 403);
    assert.match(r.body, new RegExp(`system:serviceaccount:${ns()}:stranger`));
    assert.doesNotMatch(r.body, /process_cpu/);
  });

  const unauthenticated: [string, string | undefined][] = [
    ['no token', undefined],
    ['a forged token', 'eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl'],
    ['a token of a ServiceAccount that no longer exists', 'deleted'],
  ];
  for (const [what, token] of unauthenticated) {
    it(`refuses ${what} with 401`, async () => {
      let t = token;
      if (t === 'deleted') {
        await admin.create(ServiceAccounts, {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: 'gone', namespace: ns() },
        });
        t = await tokenFor(admin, ns(), 'gone');
        await admin.delete(ServiceAccounts, 'gone', ns());
        // The API server learns of the deletion through its own informer: until then it still
        // authenticates the token (seen once in make test), and the operator asks the API server.
        const token = t;
        await eventually("the API server refuses the deleted ServiceAccount's token", async () => {
          const review = await admin.request<{ status?: { authenticated?: boolean } }>({
            method: 'POST',
            path: '/apis/authentication.k8s.io/v1/tokenreviews',
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
          });
          return review.status?.authenticated ? undefined : true;
        });
      }
      const r = await get(port(), '/metrics', t);
      assert.equal(r.status, 401, r.body);
      assert.doesNotMatch(r.body, /process_cpu/);
    });
  }

  it('speaks only TLS on the metrics port', async () => {
    await assert.rejects(fetch(`http://127.0.0.1:${port()}/metrics`));
  });

  it('leaves the probes open without a token, over plain HTTP', async () => {
    const health = mgr.address('health')!.port;
    assert.equal((await fetch(`http://127.0.0.1:${health}/healthz`)).status, 200);
    await eventually('ready', async () =>
      (await fetch(`http://127.0.0.1:${health}/readyz`)).status === 200 ? true : undefined,
    );
  });
});

describe('/metrics with a certificate from --metrics-cert-dir', () => {
  const stop = new AbortController();
  const ca = generateCa();
  const dir = mkdtempSync(join(tmpdir(), 'nw-metrics-certs-'));
  const pair = issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  writeFileSync(join(dir, 'tls.crt'), pair.cert);
  writeFileSync(join(dir, 'tls.key'), pair.key);
  let mgr: Manager;
  let running: Promise<void>;

  before(async () => {
    mgr = new Manager({
      kubeConfig: testKubeConfig(),
      metricsBindAddress: '127.0.0.1:0',
      metricsSecure: { certDir: dir },
      healthProbeBindAddress: '0',
      log: quiet,
    });
    running = mgr.start(stop.signal);
    await eventually('metrics bound', async () => (mgr.address('metrics') ? true : undefined));
  });
  after(async () => {
    stop.abort();
    await running;
  });

  it('serves the mounted pair, which a client trusting its CA verifies', async () => {
    // No token: the answer is 401, but only after a verified TLS handshake.
    const r = await get(mgr.address('metrics')!.port, '/metrics', undefined, ca.cert);
    assert.equal(r.status, 401);
  });

  it('is not trusted by a client with another CA', async () => {
    await assert.rejects(get(mgr.address('metrics')!.port, '/metrics', undefined, generateCa().cert));
  });
});

describe('nodewarden operator --metrics-secure', () => {
  it('serves /metrics over HTTPS and refuses a request without a token', async () => {
    const op = startOperator([
      '--metrics-secure',
      '--controllers',
      'nodemaintenance',
      '--webhook-bind-address',
      '0',
    ]);
    try {
      const served = await eventually(
        'the operator serving metrics',
        async () =>
          op.logs.find((l) => l.msg === 'serving metrics') as
            | { address: { port: number }; scheme: string }
            | undefined,
      );
      assert.equal(served.scheme, 'https');
      assert.equal((await get(served.address.port, '/metrics')).status, 401);
    } finally {
      await op.stop();
    }
  });
});
