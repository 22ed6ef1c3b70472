// Webhook serving certificates without cert-manager: a CA and a serving
// certificate minted in-process (see x509.ts), kept in one Secret so every
// replica serves the same pair, and rotated before expiry. The "provided"
// mode instead reloads a pair cert-manager mounts.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeClient } from './client.ts';
import { retryOnConflict } from './conflict.ts';
import { isAlreadyExists, isConflict, isNotFound } from './errors.ts';
import { type Logger, rootLogger } from './log.ts';
import { type K8sObject, Secrets, ValidatingWebhookConfigurations } from './resources.ts';
import { type CertKeyPair, generateCa, issueServingCert, YEAR_MS } from './x509.ts';

export {
  type CaOptions,
  type CertKeyPair,
  DAY_MS,
  generateCa,
  ipBytes,
  issueServingCert,
  type ServingCertOptions,
  YEAR_MS,
} from './x509.ts';

/** The names a Service answers to inside the cluster. */
export function serviceDnsNames(
  service: string,
  namespace: string,
  clusterDomain = 'cluster.local',
): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.${clusterDomain}`,
  ];
}

/** Whether less than `fraction` of the certificate's lifetime remains (or it is unreadable). */
export function needsRotation(certPem: string, now: Date = new Date(), fraction = 1 / 3): boolean {
  try {
    const c = new X509Certificate(certPem);
    const from = c.validFromDate.getTime();
    const to = c.validToDate.getTime();
    return to - now.getTime() < fraction * (to - from);
  } catch {
    return true;
  }
}

/** The PEM certificates in a bundle, in order. */
export function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [];
}

// ---- the Secret every replica shares ----

/** What the Secret holds: the CA bundle (the current CA first), the CA pair, the serving pair. */
export interface WebhookPki {
  caBundle: string;
  ca: CertKeyPair;
  serving: CertKeyPair;
}

export interface PkiWants {
  dnsNames: string[];
  ips?: string[];
  /** Reissue the serving certificate when less than this fraction of its life remains (1/3). */
  renewFraction?: number;
  /** Replace the CA when less than this remains (1 year). */
  caMinRemainingMs?: number;
}

function pairOk(p: CertKeyPair, now: Date): X509Certificate | undefined {
  try {
    const c = new X509Certificate(p.cert);
    if (!c.checkPrivateKey(createPrivateKey(p.key)) || c.validToDate <= now) return undefined;
    return c;
  } catch {
    return undefined;
  }
}

/**
 * What the Secret should hold next, or undefined when `current` is fine. A CA
 * with less than a year left is replaced, and the old one stays in the bundle
 * until it expires: replicas that have not reloaded yet still serve a
 * certificate it signed, and the API server must keep trusting it.
 */
export function planPki(
  current: WebhookPki | undefined,
  want: PkiWants,
  now = new Date(),
): WebhookPki | undefined {
  const caMin = want.caMinRemainingMs ?? YEAR_MS;
  let ca = current?.ca;
  let caCert = ca ? pairOk(ca, now) : undefined;
  let bundle = current ? splitPem(current.caBundle) : [];
  if (!ca || !caCert?.ca || caCert.validToDate.getTime() - now.getTime() < caMin) {
    ca = generateCa({ now });
    caCert = new X509Certificate(ca.cert);
    bundle = [ca.cert, ...bundle];
  }
  const keep = bundle.filter((pem, i) => {
    if (i === 0) return true; // the current CA
    try {
      return new X509Certificate(pem).validToDate > now;
    } catch {
      return false;
    }
  });
  if (keep[0] !== ca.cert) keep.unshift(ca.cert);
  const caBundle = [...new Set(keep.map((p) => (p.endsWith('\n') ? p : `${p}\n`)))].join('');

  let serving = current?.serving;
  const sc = serving ? pairOk(serving, now) : undefined;
  const covers =
    sc?.verify(caCert.publicKey) &&
    want.dnsNames.every((n) => sc.checkHost(n, { wildcards: false, subject: 'never' }) === n) &&
    (want.ips ?? []).every((ip) => sc.checkIP(ip) === ip);
  if (!serving || !covers || needsRotation(serving.cert, now, want.renewFraction ?? 1 / 3))
    serving = issueServingCert(ca, { dnsNames: want.dnsNames, ips: want.ips, now });

  const next = { caBundle, ca, serving };
  const same =
    current &&
    current.caBundle === caBundle &&
    current.ca.cert === ca.cert &&
    current.serving.cert === serving.cert;
  return same ? undefined : next;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: unknown) => (typeof s === 'string' ? Buffer.from(s, 'base64').toString('utf8') : '');

/** Reads a PKI Secret's data (keys ca.crt, ca.key, tls.crt, tls.key). */
export function pkiFromSecret(secret: K8sObject): WebhookPki | undefined {
  const d = (secret.data ?? {}) as Record<string, unknown>;
  const pki = {
    caBundle: unb64(d['ca.crt']),
    ca: { cert: splitPem(unb64(d['ca.crt']))[0] ?? '', key: unb64(d['ca.key']) },
    serving: { cert: unb64(d['tls.crt']), key: unb64(d['tls.key']) },
  };
  return pki.ca.cert && pki.ca.key ? pki : undefined;
}

export function pkiSecretData(pki: WebhookPki): Record<string, string> {
  return {
    'ca.crt': b64(pki.caBundle),
    'ca.key': b64(pki.ca.key),
    'tls.crt': b64(pki.serving.cert),
    'tls.key': b64(pki.serving.key),
  };
}

export interface EnsureCertsOptions extends PkiWants {
  namespace: string;
  secretName: string;
  now?: () => Date;
}

/**
 * Makes the Secret hold a valid PKI for `dnsNames`/`ips` and returns it:
 * creates it when missing, rotates what is due. Replicas racing to create or
 * rotate lose with AlreadyExists/Conflict, re-read, and adopt the winner's.
 */
export async function ensureWebhookCerts(
  client: KubeClient,
  opts: EnsureCertsOptions,
): Promise<{ pki: WebhookPki; action: 'unchanged' | 'created' | 'rotated' }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const secret = await client.get(Secrets, opts.secretName, opts.namespace).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    const current = secret ? pkiFromSecret(secret) : undefined;
    const next = planPki(current, opts, opts.now?.() ?? new Date());
    if (!next) return { pki: current!, action: 'unchanged' };
    try {
      if (!secret) {
        await client.create(Secrets, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: opts.secretName,
            namespace: opts.namespace,
            labels: {
              'app.kubernetes.io/component': 'webhook-certs',
              'app.kubernetes.io/managed-by': 'nodewarden',
            },
          },
          type: 'kubernetes.io/tls',
          data: pkiSecretData(next),
        });
        return { pki: next, action: 'created' };
      }
      // resourceVersion from the read makes this a compare-and-swap.
      await client.update(Secrets, { ...secret, data: { ...(secret.data ?? {}), ...pkiSecretData(next) } });
      return { pki: next, action: 'rotated' };
    } catch (err) {
      if (!isAlreadyExists(err) && !isConflict(err)) throw err;
    }
  }
  throw new Error(`secret ${opts.namespace}/${opts.secretName}: too many concurrent writers`);
}

interface WebhookEntry {
  clientConfig?: { caBundle?: string };
}

/** Puts `caPem` into every webhook's clientConfig.caBundle; returns whether anything changed. */
export async function ensureCaBundle(
  client: KubeClient,
  webhookConfigName: string,
  caPem: string,
): Promise<boolean> {
  const want = b64(caPem);
  return retryOnConflict(async () => {
    const cfg = await client.get(ValidatingWebhookConfigurations, webhookConfigName);
    const hooks = (cfg.webhooks ?? []) as WebhookEntry[];
    if (hooks.every((h) => h.clientConfig?.caBundle === want)) return false;
    const webhooks = hooks.map((h) => ({ ...h, clientConfig: { ...h.clientConfig, caBundle: want } }));
    await client.update(ValidatingWebhookConfigurations, { ...cfg, webhooks });
    return true;
  });
}

// ---- lifecycles: self-managed (Secret) and provided (mounted files) ----

export interface SecretCertSourceOptions extends EnsureCertsOptions {
  /** ValidatingWebhookConfigurations whose caBundle follows the Secret's CA bundle. */
  webhookConfigurations?: string[];
  /** How often to re-read the Secret and rotate what is due (default 30 min). */
  intervalMs?: number;
  /** A later round found a different serving pair: wire to WebhookServer.setCertificate. */
  onChange?: (serving: CertKeyPair, pki: WebhookPki) => void;
  log?: Logger;
}

/** Self-managed mode: keeps the Secret, the caBundles and this replica's serving pair current. */
export class SecretCertSource {
  private readonly client: KubeClient;
  private readonly opts: SecretCertSourceOptions;
  private readonly log: Logger;
  private last: WebhookPki | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(client: KubeClient, opts: SecretCertSourceOptions) {
    this.client = client;
    this.opts = opts;
    this.log = (opts.log ?? rootLogger).child({ secret: `${opts.namespace}/${opts.secretName}` });
  }

  current(): WebhookPki | undefined {
    return this.last;
  }

  /** One round; the first failure surfaces here, later ones are logged by the timer. */
  async sync(): Promise<WebhookPki> {
    const { pki, action } = await ensureWebhookCerts(this.client, this.opts);
    if (action !== 'unchanged') this.log.info({ action }, 'webhook certificates written');
    // caBundle before the swap: the API server must trust a new CA before we serve what it signed.
    for (const name of this.opts.webhookConfigurations ?? []) {
      try {
        if (await ensureCaBundle(this.client, name, pki.caBundle))
          this.log.info({ name }, 'caBundle updated');
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.log.warn({ name }, 'webhook configuration not found; caBundle not set');
      }
    }
    const changed = this.last && this.last.serving.cert !== pki.serving.cert;
    this.last = pki;
    if (changed) this.opts.onChange?.(pki.serving, pki);
    return pki;
  }

  async start(): Promise<WebhookPki> {
    this.stopped = false;
    const pki = await this.sync();
    this.schedule();
    return pki;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(
      () => {
        this.sync()
          .catch((err: unknown) => this.log.warn({ err }, 'webhook certificate check failed; retrying later'))
          .finally(() => this.schedule());
      },
      this.opts.intervalMs ?? 30 * 60_000,
    );
    this.timer.unref();
  }
}

export interface CertDirOptions {
  certFile?: string;
  keyFile?: string;
  /** Poll period (default 10 s); polling survives the kubelet's symlink swaps that fs.watch misses. */
  intervalMs?: number;
  onChange?: (pair: CertKeyPair) => void;
  log?: Logger;
}

/** Provided mode: the pair a directory holds (cert-manager's tls.crt and tls.key), reloaded on change. */
export class CertDirWatcher {
  readonly dir: string;
  private readonly opts: CertDirOptions;
  private last: CertKeyPair | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(dir: string, opts: CertDirOptions = {}) {
    this.dir = dir;
    this.opts = opts;
  }

  /** Reads the pair; throws unless the key matches the certificate. */
  load(): CertKeyPair {
    const pair = {
      cert: readFileSync(join(this.dir, this.opts.certFile ?? 'tls.crt'), 'utf8'),
      key: readFileSync(join(this.dir, this.opts.keyFile ?? 'tls.key'), 'utf8'),
    };
    if (!new X509Certificate(pair.cert).checkPrivateKey(createPrivateKey(pair.key)))
      throw new Error(`${this.dir}: tls.key does not match tls.crt`);
    return pair;
  }

  start(): CertKeyPair {
    this.last = this.load();
    this.timer = setInterval(() => this.poll(), this.opts.intervalMs ?? 10_000);
    this.timer.unref();
    return this.last;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Checks once; a half-written pair is skipped until the next poll sees both files. */
  poll(): boolean {
    let pair: CertKeyPair;
    try {
      pair = this.load();
    } catch (err) {
      this.opts.log?.debug({ err, dir: this.dir }, 'certificate pair not loadable yet');
      return false;
    }
    if (pair.cert === this.last?.cert && pair.key === this.last.key) return false;
    this.last = pair;
    this.opts.log?.info({ dir: this.dir }, 'webhook certificate reloaded');
    this.opts.onChange?.(pair);
    return true;
  }
}
