// The real nodes' way to the API server, against the real one: the relay process
// (`nodewarden cluster relay`) chained as on a node (a TCP port → a unix socket →
// the API server's loopback port), and a kubelet's client certificate minted
// here from the cluster's own CA. TLS passes through the relay untouched, so the
// API server authenticates the certificate itself. The network namespaces around
// it are the node lifecycle's; here everything stays on loopback.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { kubeletIdentity, renderKubeconfig } from '../../src/cluster/real-nodes/kubeconfig.ts';
import { controlPlaneBinaries } from '../../src/cluster/toolchain.ts';
import { issueClientCert } from '../../src/runtime/x509.ts';
import { testKubeconfigPath } from '../harness/cluster.ts';

const BIN = join(import.meta.dirname, '../../bin/nodewarden');

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

function run(cmd: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { timeout: 60_000 }, (error, out, err) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    ),
  );
}

describe('a kubelet certificate from the cluster CA, through the relay, to the real API server', () => {
  const clusterDir = dirname(testKubeconfigPath());
  const ca = {
    cert: readFileSync(join(clusterDir, 'pki/ca.crt'), 'utf8'),
    key: readFileSync(join(clusterDir, 'pki/ca.key'), 'utf8'),
  };
  const apiserver = new URL(parse(readFileSync(testKubeconfigPath(), 'utf8')).clusters[0].cluster.server);
  let dir = '';
  let relay: ReturnType<typeof spawn> | undefined;
  let relayOut = '';
  let relayExit: Promise<number | null>;
  let port = 0;
  let kubeconfig = '';
  let kubectl = '';

  before(async () => {
    kubectl = (await controlPlaneBinaries({ quiet: true })).kubectl;
    dir = mkdtempSync(join(tmpdir(), 'nw-relay-it-'));
    port = await freePort();
    const sock = join(dir, 'api.sock');
    relay = spawn(
      BIN,
      [
        'cluster',
        'relay',
        '--forward',
        `unix:${sock}=tcp:127.0.0.1:${apiserver.port}`,
        '--forward',
        `tcp:127.0.0.1:${port}=unix:${sock}`,
      ],
      { env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    relay.stdout?.on('data', (c: Buffer) => {
      relayOut += c.toString();
    });
    relay.stderr?.on('data', (c: Buffer) => {
      relayOut += c.toString();
    });
    relayExit = new Promise((r) => relay?.once('exit', r));
    const deadline = Date.now() + 30_000;
    while (!relayOut.includes('"relay listening"')) {
      if (Date.now() > deadline || relay.exitCode !== null)
        throw new Error(`the relay did not listen:\n${relayOut}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    kubeconfig = join(dir, 'kubelet.kubeconfig');
    writeFileSync(
      kubeconfig,
      renderKubeconfig({
        server: `https://127.0.0.1:${port}`,
        caCert: ca.cert,
        client: issueClientCert(ca, kubeletIdentity('test-node')),
        user: 'kubelet',
      }),
    );
  });

  after(async () => {
    relay?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs with the kind of key the cluster CA has', (t) => {
    const type = createPrivateKey(ca.key).asymmetricKeyType;
    t.diagnostic(`kwokctl's cluster CA key: ${type}`);
    assert.ok(type === 'rsa' || type === 'ec', String(type));
  });

  it('the API server takes the certificate for system:node:test-node in system:nodes', async () => {
    const r = await run(kubectl, ['--kubeconfig', kubeconfig, 'auth', 'whoami', '-o', 'json']);
    assert.equal(r.code, 0, r.err);
    const review = JSON.parse(r.out) as { status: { userInfo: { username: string; groups: string[] } } };
    assert.equal(review.status.userInfo.username, 'system:node:test-node');
    assert.ok(
      review.status.userInfo.groups.includes('system:nodes'),
      review.status.userInfo.groups.join(','),
    );
  });

  it('and authorizes it as that node, not as anyone more', async () => {
    const secrets = await run(kubectl, ['--kubeconfig', kubeconfig, 'get', 'secrets', '-n', 'kube-system']);
    assert.notEqual(secrets.code, 0);
    assert.match(secrets.err, /Forbidden.*"system:node:test-node" cannot list resource "secrets"/);
    // The Node authorizer lets a node read nodes (its own does not exist yet).
    const node = await run(kubectl, ['--kubeconfig', kubeconfig, 'get', 'node', 'test-node']);
    assert.match(node.err, /NotFound|not found/, node.err);
  });

  it('a certificate not from the cluster CA is refused through the same relay', async () => {
    const { generateCa } = await import('../../src/runtime/x509.ts');
    const stranger = join(dir, 'stranger.kubeconfig');
    writeFileSync(
      stranger,
      renderKubeconfig({
        server: `https://127.0.0.1:${port}`,
        caCert: ca.cert,
        client: issueClientCert(generateCa(), kubeletIdentity('test-node')),
        user: 'kubelet',
      }),
    );
    const r = await run(kubectl, ['--kubeconfig', stranger, 'auth', 'whoami']);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /Unauthorized|must be logged in/);
  });

  it('stops on SIGTERM with its socket removed', async () => {
    relay?.kill('SIGTERM');
    assert.equal(await relayExit, 0, relayOut);
    assert.equal(existsSync(join(dir, 'api.sock')), false);
  });
});
