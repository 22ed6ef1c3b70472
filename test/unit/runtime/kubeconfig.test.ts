import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeConfig as ClientNodeKubeConfig } from '@kubernetes/client-node';
import { KubeConfig } from '../../../src/runtime/kubeconfig.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(
  opts: { cluster?: string; user?: string; current?: string; names?: string } = {},
): string {
  const n = opts.names ?? 'a';
  return [
    'apiVersion: v1',
    'kind: Config',
    ...(opts.current === undefined
      ? [`current-context: ${n}`]
      : opts.current
        ? [`current-context: ${opts.current}`]
        : []),
    'clusters:',
    `- name: ${n}`,
    '  cluster:',
    `    server: https://${n}.example:6443/`,
    ...(opts.cluster ?? `    certificate-authority-data: ${b64(`ca-${n}`)}`).split('\n'),
    'users:',
    `- name: ${n}`,
    '  user:',
    ...(opts.user ?? `    token: tok-${n}`).split('\n'),
    'contexts:',
    `- name: ${n}`,
    '  context:',
    `    cluster: ${n}`,
    `    user: ${n}`,
    '    namespace: ns',
    '',
  ].join('\n');
}

async function optionsOf(kc: { applyToHTTPSOptions(o: https.RequestOptions): Promise<void> }) {
  const o: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(o);
  return o;
}

describe('KubeConfig (our reader)', () => {
  let dir: string;
  const env = { ...process.env };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'kubeconfig-test-'));
  });
  after(() => {
    process.env = env;
    rmSync(dir, { recursive: true, force: true });
  });
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('gives the same TLS material and headers as client-node for token, cert, basic and insecure users', async () => {
    mkdirSync(join(dir, 'certs'), { recursive: true });
    writeFileSync(join(dir, 'certs', 'ca.crt'), 'ca-from-file');
    writeFileSync(join(dir, 'tok'), 'from-token-file');
    const cases = {
      token: kubeconfig(),
      'relative CA file, client cert data': kubeconfig({
        cluster: '    certificate-authority: certs/ca.crt',
        user: `    client-certificate-data: ${b64('cert')}\n    client-key-data: ${b64('key')}`,
      }),
      'basic auth, insecure, tls-server-name': kubeconfig({
        cluster: '    insecure-skip-tls-verify: true\n    tls-server-name: api.internal',
        user: '    username: admin\n    password: secret',
      }),
      'token-file': kubeconfig({ user: `    token-file: ${join(dir, 'tok')}` }),
    };
    for (const [name, text] of Object.entries(cases)) {
      const p = file(`${name.replace(/\W/g, '-')}.yaml`, text);
      const ours = new KubeConfig();
      ours.loadFromFile(p);
      const theirs = new ClientNodeKubeConfig();
      theirs.loadFromFile(p);
      assert.equal(ours.getCurrentCluster()?.server, theirs.getCurrentCluster()?.server, name);
      const [o, t] = [await optionsOf(ours), await optionsOf(theirs)];
      for (const k of ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername', 'auth'] as const)
        assert.deepEqual(o[k], t[k], `${name}: ${k}`);
      assert.equal(
        (o.headers as Record<string, string>).Authorization,
        (t.headers as Record<string, string>).Authorization,
        name,
      );
    }
  });

  it("reads kubectl's tokenFile spelling too (client-node reads only token-file)", async () => {
    writeFileSync(join(dir, 'tok2'), 'kubectl-spelling');
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig({ user: `    tokenFile: ${join(dir, 'tok2')}` }));
    assert.equal(
      ((await optionsOf(kc)).headers as Record<string, string>).Authorization,
      'Bearer kubectl-spelling',
    );
  });

  it('reads the cluster server without its trailing slash and the context namespace', () => {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig());
    assert.equal(kc.getCurrentCluster()?.server, 'https://a.example:6443');
    assert.equal(kc.getContextObject('a')?.namespace, 'ns');
    assert.equal(kc.getContextObject('nope'), null);
  });

  it('switches context, and has no cluster for a context that names none', () => {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig());
    kc.setCurrentContext('missing');
    assert.equal(kc.getCurrentContext(), 'missing');
    assert.equal(kc.getCurrentCluster(), null);
    assert.equal(kc.getCurrentUser(), null);
  });

  it('fails on a missing file with ENOENT and its path', () => {
    const kc = new KubeConfig();
    const missing = join(dir, 'nope.yaml');
    assert.throws(() => kc.loadFromFile(missing), { code: 'ENOENT', path: missing });
  });

  it('merges a $KUBECONFIG list: the first file to name a cluster, user or context keeps it', () => {
    const one = file('one.yaml', kubeconfig({ names: 'a' }));
    const two = file('two.yaml', kubeconfig({ names: 'b', current: '' }));
    const dup = file('dup.yaml', kubeconfig({ names: 'a', user: '    token: other' }));
    process.env.KUBECONFIG = [two, '', one, dup].join(delimiter);
    const kc = new KubeConfig();
    kc.loadFromDefault();
    assert.deepEqual(
      kc.contexts.map((c) => c.name),
      ['b', 'a'],
    );
    // two.yaml sets no current context; one.yaml's is taken.
    assert.equal(kc.getCurrentContext(), 'a');
    assert.equal(kc.getCurrentUser()?.token, 'tok-a');
  });

  it('falls back to ~/.kube/config, then to http://localhost:8080', () => {
    delete process.env.KUBECONFIG;
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    process.env.HOME = home;
    const bare = new KubeConfig();
    bare.loadFromDefault();
    assert.equal(bare.getCurrentCluster()?.server, 'http://localhost:8080');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), kubeconfig({ names: 'h' }));
    const kc = new KubeConfig();
    kc.loadFromDefault();
    assert.equal(kc.getCurrentCluster()?.server, 'https://h.example:6443');
  });

  it('reads the in-cluster account and re-reads its rotating token', async () => {
    const root = join(dir, 'pod');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'first\n');
    writeFileSync(join(sa, 'ca.crt'), 'pod-ca');
    writeFileSync(join(sa, 'namespace'), 'system');
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    const kc = new KubeConfig();
    kc.loadFromCluster(root);
    assert.equal(kc.getCurrentCluster()?.server, 'https://[fd00::1]:443');
    assert.equal(kc.getContextObject(kc.getCurrentContext())?.namespace, 'system');
    // The client treats an auth-provider user's headers as expiring: it asks again.
    assert.ok(kc.getCurrentUser()?.authProvider);
    const first = await optionsOf(kc);
    assert.equal(String(first.ca), 'pod-ca');
    assert.equal((first.headers as Record<string, string>).Authorization, 'Bearer first');
    writeFileSync(join(sa, 'token'), 'second\n');
    assert.equal(((await optionsOf(kc)).headers as Record<string, string>).Authorization, 'Bearer second');
  });

  it('runs an exec plugin with its env and reuses its credential until it expires', async () => {
    const count = join(dir, 'exec-count');
    writeFileSync(count, '');
    const plugin = file(
      'plugin.mjs',
      [
        "import { appendFileSync } from 'node:fs';",
        `appendFileSync(${JSON.stringify(count)}, 'x');`,
        'const expirationTimestamp = new Date(Date.now() + Number(process.env.TTL_MS)).toISOString();',
        "console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential',",
        "  status: { token: 'exec-' + process.env.WHO, expirationTimestamp } }));",
      ].join('\n'),
    );
    chmodSync(plugin, 0o755);
    const user = (ttl: number) =>
      [
        '    exec:',
        '      apiVersion: client.authentication.k8s.io/v1',
        `      command: ${process.execPath}`,
        `      args: [${plugin}]`,
        '      env:',
        '      - name: WHO',
        '        value: me',
        '      - name: TTL_MS',
        `        value: "${ttl}"`,
      ].join('\n');
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig({ user: user(60_000) }));
    assert.equal(((await optionsOf(kc)).headers as Record<string, string>).Authorization, 'Bearer exec-me');
    await optionsOf(kc);
    assert.equal(readFileSync(count, 'utf8'), 'x', 'a valid credential is reused');

    const expiring = new KubeConfig();
    expiring.loadFromString(kubeconfig({ user: user(-1000) }));
    await optionsOf(expiring);
    await optionsOf(expiring);
    assert.equal(readFileSync(count, 'utf8'), 'xxx', 'an expired credential is asked for again');
  });

  it('says which exec plugin failed', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(
      kubeconfig({
        user: `    exec:\n      command: ${process.execPath}\n      args: ["-e", "process.exit(3)"]`,
      }),
    );
    await assert.rejects(optionsOf(kc), /exec credential plugin .* exited 3/);
  });

  it('hands proxy-url to client-node, which builds the proxy agent', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfig({ cluster: '    proxy-url: http://proxy.example:3128' }));
    const o = await optionsOf(kc);
    assert.ok(o.agent instanceof http.Agent);
    assert.equal((o.headers as Record<string, string>).Authorization, 'Bearer tok-a');
  });

  it('refuses a cluster without a server', () => {
    const kc = new KubeConfig();
    assert.throws(
      () => kc.loadFromString('clusters:\n- name: x\n  cluster: {}\n'),
      /cluster x has no server/,
    );
  });
});
