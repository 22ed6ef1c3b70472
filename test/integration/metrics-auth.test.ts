// Secure /metrics against the real API server: a ServiceAccount token bound to
// the shipped metrics-reader ClusterRole reads it, one without gets 403, no or
// a forged token 401, and the probes stay open to the kubelet.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import type { PolicyRule } from '../../src/manifests/rbac.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { eventually, testKubeConfig, useNamespace } from '../harness/cluster.ts';
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

/** GET over TLS; the certificate is the operator's own self-signed one, so it is not verified here. */
function get(port: number, path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path,
        rejectUnauthorized: false,
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
