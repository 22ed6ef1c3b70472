// The real Cluster API core manager beside a local cluster, out of cluster:
// hack/build-clusterapi.sh builds it (and copies its CRDs and webhook
// manifests) from the Go module proxy; here its CRDs are installed with their
// conversion webhook, its admission webhooks registered by URL with a CA we
// mint (as nodewarden's own webhook is in tests), and the manager started with
// --kubeconfig, every server of it on loopback.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { generateCa, issueServingCert } from '../../../runtime/certs.ts';
import type { KubeClient } from '../../../runtime/client.ts';
import { isAlreadyExists } from '../../../runtime/errors.ts';
import { builtInKind, CustomResourceDefinitions, type K8sObject } from '../../../runtime/resources.ts';
import { lastLineOf, REPO_ROOT } from '../../toolchain.ts';

const MutatingWebhookConfigurations = builtInKind(
  'admissionregistration.k8s.io',
  'v1',
  'MutatingWebhookConfiguration',
  'mutatingwebhookconfigurations',
  false,
);
const ValidatingWebhookConfigurations = builtInKind(
  'admissionregistration.k8s.io',
  'v1',
  'ValidatingWebhookConfiguration',
  'validatingwebhookconfigurations',
  false,
);

/** The folder hack/build-clusterapi.sh prints (NODEWARDEN_CLUSTERAPI_DIR overrides): capi-manager, crd/, webhook/. */
export async function clusterApiBuild(): Promise<string> {
  const given = process.env.NODEWARDEN_CLUSTERAPI_DIR;
  const dir = given ?? (await runBuild());
  if (!existsSync(join(dir, 'capi-manager')))
    throw new Error(`no capi-manager in ${dir} (run make clusterapi)`);
  return dir;
}

function runBuild(): Promise<string> {
  return lastLineOf('bash', [join(REPO_ROOT, 'hack', 'build-clusterapi.sh')], false).catch((err: Error) => {
    throw new Error(`hack/build-clusterapi.sh failed (${err.message}); see its output above`);
  });
}

/** A TCP port free on loopback now (the manager binds it a moment later). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export interface WebhookEndpoint {
  /** https://127.0.0.1:<port> */
  url: string;
  caPem: string;
}

/** Names the webhook configurations get here, so several runs never share one. */
export interface InstallOptions extends WebhookEndpoint {
  configPrefix: string;
}

/** The CRDs, with conversion through the manager's webhook: their storage version is v1beta2, v1beta1 is still served. */
export async function installClusterApiCrds(
  client: KubeClient,
  dir: string,
  ep: WebhookEndpoint,
): Promise<void> {
  const files = readdirSync(join(dir, 'crd')).filter((f) => f.endsWith('.yaml'));
  for (const f of files) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, 'crd', f), 'utf8'))) {
      const crd = doc.toJS() as K8sObject & { spec: Record<string, unknown> };
      if (!crd?.kind) continue;
      crd.spec.conversion = {
        strategy: 'Webhook',
        webhook: {
          conversionReviewVersions: ['v1'],
          clientConfig: { url: `${ep.url}/convert`, caBundle: Buffer.from(ep.caPem).toString('base64') },
        },
      };
      await createOrReplace(client, CustomResourceDefinitions, crd);
      await waitForEstablished(client, crd.metadata?.name ?? '');
    }
  }
}

/** A CRD's kind is served (and a manager's cache can list it) once it is Established. */
export async function waitForEstablished(
  client: KubeClient,
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const got = await client.get<{ status?: { conditions?: { type: string; status: string }[] } }>(
      CustomResourceDefinitions,
      name,
    );
    if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`CRD ${name} is not Established after ${timeoutMs} ms`);
}

/** The manager's admission webhooks, each service reference turned into a URL on loopback. */
export async function registerClusterApiWebhooks(
  client: KubeClient,
  dir: string,
  o: InstallOptions,
): Promise<string[]> {
  const names: string[] = [];
  for (const doc of parseAllDocuments(readFileSync(join(dir, 'webhook', 'manifests.yaml'), 'utf8'))) {
    const cfg = doc.toJS() as K8sObject & { webhooks: { clientConfig: Record<string, unknown> }[] };
    if (!cfg?.kind) continue;
    const type =
      cfg.kind === 'MutatingWebhookConfiguration'
        ? MutatingWebhookConfigurations
        : ValidatingWebhookConfigurations;
    const name = `${o.configPrefix}-${cfg.kind === 'MutatingWebhookConfiguration' ? 'mutating' : 'validating'}`;
    cfg.metadata = { name };
    for (const w of cfg.webhooks) {
      const svc = w.clientConfig.service as { path?: string } | undefined;
      w.clientConfig = {
        url: `${o.url}${svc?.path ?? '/'}`,
        caBundle: Buffer.from(o.caPem).toString('base64'),
      };
    }
    await createOrReplace(client, type, cfg);
    names.push(`${cfg.kind}/${name}`);
  }
  return names;
}

/** Removes what registerClusterApiWebhooks made: a failurePolicy Fail webhook left pointing at a dead server blocks every later write. */
export async function removeClusterApiWebhooks(client: KubeClient, configPrefix: string): Promise<void> {
  await client.delete(MutatingWebhookConfigurations, `${configPrefix}-mutating`, undefined, {
    ignoreNotFound: true,
  });
  await client.delete(ValidatingWebhookConfigurations, `${configPrefix}-validating`, undefined, {
    ignoreNotFound: true,
  });
}

export async function createOrReplace(
  client: KubeClient,
  type: ReturnType<typeof builtInKind>,
  obj: K8sObject,
) {
  try {
    await client.create(type, obj);
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const cur = await client.get<K8sObject>(type, obj.metadata?.name ?? '');
    await client.update(type, {
      ...obj,
      metadata: { ...obj.metadata, resourceVersion: cur.metadata?.resourceVersion },
    });
  }
}

export interface CoreManager {
  process: ChildProcess;
  webhook: WebhookEndpoint;
  healthUrl: string;
  logFile: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  dir: string;
  kubeconfig: string;
  /** A folder of its own: serving certificates and the log go here. */
  workDir: string;
  /** Extra flags (e.g. --feature-gates). */
  args?: string[];
  /** Runs once the webhook endpoint is known, before the process starts: install CRDs and webhooks here. */
  beforeStart?(webhook: WebhookEndpoint): Promise<void>;
}

/**
 * Mints the webhook's CA and serving pair and starts the manager on loopback. The webhook
 * endpoint is known before the process starts, so CRDs and webhook configurations are
 * registered first (beforeStart): the manager's caches need its CRDs. Call waitForReady next.
 */
export async function startCoreManager(o: StartOptions): Promise<CoreManager> {
  const certDir = join(o.workDir, 'certs');
  mkdirSync(certDir, { recursive: true });
  const ca = generateCa({ commonName: 'nodewarden-capi-webhook-ca' });
  const pair = issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  writeFileSync(join(certDir, 'tls.crt'), pair.cert);
  writeFileSync(join(certDir, 'tls.key'), pair.key, { mode: 0o600 });
  const [webhookPort, healthPort, diagPort] = [
    await freeLoopbackPort(),
    await freeLoopbackPort(),
    await freeLoopbackPort(),
  ];
  const webhook = { url: `https://127.0.0.1:${webhookPort}`, caPem: ca.cert };
  await o.beforeStart?.(webhook);
  const logFile = join(o.workDir, 'capi-manager.log');
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(
    join(o.dir, 'capi-manager'),
    [
      `--kubeconfig=${o.kubeconfig}`,
      '--leader-elect=false',
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      `--diagnostics-address=127.0.0.1:${diagPort}`,
      '--insecure-diagnostics',
      ...(o.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CAPI_WEBHOOK_HOST: '127.0.0.1' } },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  return {
    process: child,
    webhook,
    healthUrl,
    logFile,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
      log.end();
    },
  };
}

/** Resolves when the manager's /readyz answers 200; rejects with the log's tail when it exits or time runs out. */
export async function waitForReady(m: CoreManager, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (m.process.exitCode !== null) break;
    try {
      const res = await fetch(`${m.healthUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const tail = existsSync(m.logFile) ? readFileSync(m.logFile, 'utf8').split('\n').slice(-30).join('\n') : '';
  throw new Error(
    `the Cluster API manager is not ready (exit ${m.process.exitCode}); its log ends:\n${tail}`,
  );
}
