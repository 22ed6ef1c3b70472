// Who may read /metrics, decided by the API server as controller-runtime's
// WithAuthenticationAndAuthorization does: the bearer token goes to a
// TokenReview, the user it names to a SubjectAccessReview for the
// non-resource URL and the request's verb. Answers are kept a few seconds so a
// scraper polling every few seconds costs the API server nothing most times.
import { createHash } from 'node:crypto';
import type { KubeClient } from './client.ts';
import { type Logger, rootLogger } from './log.ts';

export type AuthVerdict =
  | { allowed: true; user: string }
  | { allowed: false; code: 401 | 403 | 500; message: string };

export interface MetricsAuthOptions {
  /** How long a review's answer is reused (default 10 s). Failures to ask are never kept. */
  cacheTtlMs?: number;
  /** At most this many answers are kept; the oldest go first (default 1000). */
  maxEntries?: number;
  now?: () => number;
  log?: Logger;
}

interface ReviewedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

type Authn = { user: ReviewedUser } | { refused: string };

// The verbs the API server's own request-info maps HTTP methods to, for non-resource URLs.
const VERBS: Record<string, string> = {
  GET: 'get',
  HEAD: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** A map whose entries expire, bounded so a flood of random tokens cannot grow it without end. */
class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly now: () => number;

  constructor(ttlMs: number, max: number, now: () => number) {
    this.ttlMs = ttlMs;
    this.max = max;
    this.now = now;
  }

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until > this.now()) return e.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V): void {
    if (this.ttlMs <= 0) return;
    this.entries.delete(key);
    // Map keeps insertion order: the first key is the oldest.
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}

export class MetricsAuthFilter {
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly authn: ExpiringCache<Authn>;
  private readonly authz: ExpiringCache<boolean>;

  constructor(client: KubeClient, opts: MetricsAuthOptions = {}) {
    this.client = client;
    this.log = (opts.log ?? rootLogger).child({ component: 'metrics-auth' });
    const ttl = opts.cacheTtlMs ?? 10_000;
    const max = opts.maxEntries ?? 1000;
    const now = opts.now ?? Date.now;
    this.authn = new ExpiringCache(ttl, max, now);
    this.authz = new ExpiringCache(ttl, max, now);
  }

  /** Whether the request carrying `authorization` may `method` the non-resource URL `path`. */
  async check(authorization: string | undefined, method: string, path: string): Promise<AuthVerdict> {
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (!token) return { allowed: false, code: 401, message: 'Unauthorized: a bearer token is required' };
    let who: Authn;
    try {
      who = await this.authenticate(token);
    } catch (err) {
      this.log.warn({ err }, 'TokenReview failed');
      return { allowed: false, code: 500, message: 'Internal Server Error: cannot review the token' };
    }
    if ('refused' in who) return { allowed: false, code: 401, message: `Unauthorized: ${who.refused}` };
    const verb = VERBS[method.toUpperCase()] ?? method.toLowerCase();
    let allowed: boolean;
    try {
      allowed = await this.authorize(who.user, verb, path);
    } catch (err) {
      this.log.warn({ err }, 'SubjectAccessReview failed');
      return { allowed: false, code: 500, message: 'Internal Server Error: cannot review access' };
    }
    if (!allowed)
      return {
        allowed: false,
        code: 403,
        message: `Forbidden: user "${who.user.username}" may not ${verb} path "${path}"`,
      };
    return { allowed: true, user: who.user.username };
  }

  private async authenticate(token: string): Promise<Authn> {
    // Keyed by a digest: the cache must not be a second copy of every token.
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.authn.get(key);
    if (cached) return cached;
    const review = await this.client.request<{
      status?: { authenticated?: boolean; user?: ReviewedUser; error?: string };
    }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const s = review.status;
    const result: Authn =
      s?.authenticated && s.user?.username
        ? { user: s.user }
        : { refused: s?.error ? `invalid token (${s.error})` : 'invalid token' };
    this.authn.set(key, result);
    return result;
  }

  private async authorize(user: ReviewedUser, verb: string, path: string): Promise<boolean> {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]);
    const cached = this.authz.get(key);
    if (cached !== undefined) return cached;
    const review = await this.client.request<{ status?: { allowed?: boolean } }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: user.username,
          uid: user.uid,
          groups: user.groups,
          extra: user.extra,
          nonResourceAttributes: { path, verb },
        },
      },
    });
    const allowed = review.status?.allowed === true;
    this.authz.set(key, allowed);
    return allowed;
  }
}
