// Our own kubeconfig reader. Importing @kubernetes/client-node for its KubeConfig
// costs every process ~85 MiB RSS and ~0.7 s before it does any work (it loads the
// whole generated API); the runtime needs only the file's clusters, users and
// contexts and the credentials they name. This reads them the way client-node and
// kubectl do: $KUBECONFIG lists (first file wins a name), ~/.kube/config, the
// in-cluster service account, then http://localhost:8080. Token, token file, client
// certificates, basic auth, exec plugins and insecure-skip-tls-verify are ours; the
// rare rest (auth-provider plugins, proxy-url) loads client-node on first use.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

export interface KubeCluster {
  name: string;
  server: string;
  caFile?: string;
  caData?: string;
  skipTLSVerify: boolean;
  tlsServerName?: string;
  proxyUrl?: string;
}

export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
}

export interface KubeUser {
  name: string;
  token?: string;
  certFile?: string;
  certData?: string;
  keyFile?: string;
  keyData?: string;
  username?: string;
  password?: string;
  exec?: ExecConfig;
  authProvider?: { name: string; config?: Record<string, unknown> };
}

export interface KubeContext {
  name: string;
  cluster: string;
  user?: string;
  namespace?: string;
}

/** What KubeClient reads from a kubeconfig: ours, or client-node's (tests still hand it one). */
export interface KubeConfigSource {
  getCurrentContext(): string;
  getCurrentCluster(): { server: string; caFile?: string; caData?: string; proxyUrl?: string } | null;
  getCurrentUser(): { exec?: unknown; authProvider?: unknown } | null;
  applyToHTTPSOptions(o: https.RequestOptions): Promise<void>;
}

const SERVICEACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

interface ExecCredential {
  status?: {
    token?: string;
    clientCertificateData?: string;
    clientKeyData?: string;
    expirationTimestamp?: string;
  };
}

type Raw = Record<string, unknown>;

export class KubeConfig implements KubeConfigSource {
  clusters: KubeCluster[] = [];
  users: KubeUser[] = [];
  contexts: KubeContext[] = [];
  currentContext = '';
  private execCache = new Map<string, ExecCredential>();
  private full: Promise<KubeConfigSource> | undefined;

  loadFromFile(file: string): void {
    this.loadFromString(readFileSync(file, 'utf8'), dirname(file));
  }

  /** Relative certificate paths resolve against `root` (the file's folder), as kubectl does. */
  loadFromString(text: string, root?: string): void {
    const doc = (parse(text) ?? {}) as Raw;
    this.clusters = listOf(doc.clusters, 'cluster').map(([name, c]) => clusterOf(name, c, root));
    this.users = listOf(doc.users, 'user').map(([name, u]) => userOf(name, u, root));
    this.contexts = listOf(doc.contexts, 'context').map(([name, c]) => ({
      name,
      cluster: String(c.cluster ?? ''),
      user: str(c.user),
      namespace: str(c.namespace),
    }));
    this.currentContext = str(doc['current-context']) ?? '';
  }

  loadFromDefault(): void {
    const files = (process.env.KUBECONFIG ?? '').split(delimiter).filter((f) => f);
    if (files.length > 0) {
      this.loadFromFile(files[0] as string);
      for (const f of files.slice(1)) {
        const next = new KubeConfig();
        next.loadFromFile(f);
        this.merge(next);
      }
      return;
    }
    const home = join(process.env.HOME || homedir(), '.kube', 'config');
    if (existsSync(home)) this.loadFromFile(home);
    else if (existsSync(`${SERVICEACCOUNT}/token`)) this.loadFromCluster();
    else
      this.set({ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }, { name: 'user' });
  }

  /** The pod's service account; the token file is re-read (tokens rotate) via the tokenFile provider. */
  loadFromCluster(prefix = ''): void {
    const host = process.env.KUBERNETES_SERVICE_HOST ?? '';
    const port = process.env.KUBERNETES_SERVICE_PORT ?? '';
    const scheme = ['80', '8080', '8001'].includes(port) ? 'http' : 'https';
    const h = host.includes(':') ? `[${host}]` : host;
    const nsFile = `${prefix}${SERVICEACCOUNT}/namespace`;
    this.set(
      {
        name: 'inCluster',
        server: `${scheme}://${h}:${port}`,
        caFile: `${prefix}${SERVICEACCOUNT}/ca.crt`,
        skipTLSVerify: false,
      },
      {
        name: 'inClusterUser',
        authProvider: { name: 'tokenFile', config: { tokenFile: `${prefix}${SERVICEACCOUNT}/token` } },
      },
      existsSync(nsFile) ? readFileSync(nsFile, 'utf8') : undefined,
    );
  }

  getCurrentContext(): string {
    return this.currentContext;
  }

  setCurrentContext(name: string): void {
    this.currentContext = name;
  }

  getContextObject(name: string): KubeContext | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCurrentCluster(): KubeCluster | null {
    const ctx = this.getContextObject(this.currentContext);
    return (ctx && this.clusters.find((c) => c.name === ctx.cluster)) ?? null;
  }

  getCurrentUser(): KubeUser | null {
    const ctx = this.getContextObject(this.currentContext);
    return (ctx && this.users.find((u) => u.name === ctx.user)) ?? null;
  }

  /** TLS material and the Authorization header (or `auth` for basic) for the current context. */
  async applyToHTTPSOptions(o: https.RequestOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (cluster?.proxyUrl || (user?.authProvider && user.authProvider.name !== 'tokenFile'))
      return (await this.delegate()).applyToHTTPSOptions(o);
    if (!user) return;
    if (cluster?.skipTLSVerify) o.rejectUnauthorized = false;
    if (cluster?.tlsServerName) o.servername = cluster.tlsServerName;
    const ca = bytes(cluster?.caFile, cluster?.caData);
    if (ca) o.ca = ca;
    const cert = bytes(user.certFile, user.certData);
    if (cert) o.cert = cert;
    const key = bytes(user.keyFile, user.keyData);
    if (key) o.key = key;
    const headers: Record<string, string> = { ...(o.headers as Record<string, string>) };
    const tokenFile = user.authProvider?.config?.tokenFile;
    if (typeof tokenFile === 'string')
      headers.Authorization = `Bearer ${readFileSync(tokenFile, 'utf8').trim()}`;
    if (user.exec) {
      const status = (await this.execCredential(user, user.exec)).status ?? {};
      if (status.clientCertificateData) o.cert = status.clientCertificateData;
      if (status.clientKeyData) o.key = status.clientKeyData;
      if (status.token) headers.Authorization = `Bearer ${status.token}`;
    }
    if (user.token) headers.Authorization = `Bearer ${user.token}`;
    o.headers = headers;
    if (user.username) o.auth = `${user.username}:${user.password ?? ''}`;
  }

  // Runs the exec plugin; its answer is reused until its expirationTimestamp (forever without one).
  private async execCredential(user: KubeUser, exec: ExecConfig): Promise<ExecCredential> {
    const cached = this.execCache.get(user.name);
    const expiry = cached?.status?.expirationTimestamp;
    if (cached && (!expiry || Date.parse(expiry) > Date.now())) return cached;
    const env = { ...process.env };
    for (const e of exec.env ?? []) env[e.name] = e.value;
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(exec.command, exec.args ?? [], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d;
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d;
      });
      child.on('error', reject);
      child.on('close', (code) =>
        code === 0
          ? resolve(stdout)
          : reject(new Error(`exec credential plugin ${exec.command} exited ${code}: ${stderr.trim()}`)),
      );
    });
    const cred = JSON.parse(out) as ExecCredential;
    this.execCache.set(user.name, cred);
    return cred;
  }

  // client-node, loaded only for what we do not implement, with the same clusters, users and contexts.
  private delegate(): Promise<KubeConfigSource> {
    this.full ??= import('@kubernetes/client-node').then(({ KubeConfig: Full }) => {
      const kc = new Full();
      kc.loadFromOptions({
        clusters: this.clusters,
        users: this.users,
        contexts: this.contexts,
        currentContext: this.currentContext,
      });
      return kc;
    });
    return this.full;
  }

  // $KUBECONFIG: the first file to name a cluster, user or context keeps it, as kubectl does.
  private merge(next: KubeConfig): void {
    if (!this.currentContext) this.currentContext = next.currentContext;
    const add = <T extends { name: string }>(mine: T[], theirs: T[]) => {
      for (const t of theirs) if (!mine.some((m) => m.name === t.name)) mine.push(t);
    };
    add(this.clusters, next.clusters);
    add(this.users, next.users);
    add(this.contexts, next.contexts);
  }

  private set(cluster: KubeCluster, user: KubeUser, namespace?: string): void {
    this.clusters = [cluster];
    this.users = [user];
    this.contexts = [{ name: `${cluster.name}Context`, cluster: cluster.name, user: user.name, namespace }];
    this.currentContext = `${cluster.name}Context`;
  }
}

function listOf(v: unknown, key: string): [string, Raw][] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Error(`kubeconfig: ${key}s is not a list`);
  return v.map((e: Raw, i) => {
    if (!e || typeof e.name !== 'string') throw new Error(`kubeconfig: ${key}s[${i}] has no name`);
    return [e.name, (e[key] ?? {}) as Raw];
  });
}

function clusterOf(name: string, c: Raw, root: string | undefined): KubeCluster {
  if (typeof c.server !== 'string') throw new Error(`kubeconfig: cluster ${name} has no server`);
  return {
    name,
    server: c.server.replace(/\/$/, ''),
    caFile: path(c['certificate-authority'], root),
    caData: str(c['certificate-authority-data']),
    skipTLSVerify: c['insecure-skip-tls-verify'] === true,
    tlsServerName: str(c['tls-server-name']),
    proxyUrl: str(c['proxy-url']),
  };
}

function userOf(name: string, u: Raw, root: string | undefined): KubeUser {
  const tokenFile = path(u.tokenFile ?? u['token-file'], root);
  return {
    name,
    token: str(u.token) ?? (tokenFile ? readFileSync(tokenFile, 'utf8') : undefined),
    certFile: path(u['client-certificate'], root),
    certData: str(u['client-certificate-data']),
    keyFile: path(u['client-key'], root),
    keyData: str(u['client-key-data']),
    username: str(u.username),
    password: str(u.password),
    exec: u.exec as ExecConfig | undefined,
    authProvider: u['auth-provider'] as KubeUser['authProvider'],
  };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function path(v: unknown, root: string | undefined): string | undefined {
  const p = str(v);
  return p && root && !isAbsolute(p) ? join(root, p) : p;
}

function bytes(file: string | undefined, data: string | undefined): Buffer | undefined {
  if (file) return readFileSync(file);
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}
