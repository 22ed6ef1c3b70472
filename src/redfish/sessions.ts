// Redfish sessions (SessionService/Sessions): a login with a machine's
// credentials yields a token good for the machines with those credentials
// only, until it is deleted or sits idle past the timeout. Kept in memory: a
// restarted BMC forgets its sessions, and clients log in again.
import { randomBytes } from 'node:crypto';
import type { SystemCredentials } from './backend.ts';

export interface Session {
  id: string;
  token: string;
  credentials: SystemCredentials;
  lastUsed: number;
}

export interface SessionStoreOptions {
  /** Idle time after which a session is gone. Default 30 minutes (a common BMC default). */
  timeoutMs?: number;
  /** The most sessions kept; the least recently used go first. Default 1000. */
  max?: number;
}

export class SessionStore {
  private readonly byToken = new Map<string, Session>();
  readonly timeoutMs: number;
  private readonly max: number;

  constructor(opts: SessionStoreOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 30 * 60_000;
    this.max = opts.max ?? 1000;
  }

  create(credentials: SystemCredentials, now: number): Session {
    this.expire(now);
    while (this.byToken.size >= this.max) {
      const oldest = [...this.byToken.values()].sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (oldest) this.byToken.delete(oldest.token);
    }
    const session: Session = {
      id: randomBytes(8).toString('hex'),
      token: randomBytes(24).toString('hex'),
      credentials: { ...credentials },
      lastUsed: now,
    };
    this.byToken.set(session.token, session);
    return session;
  }

  /** The live session of a token, its idle time restarted; undefined if unknown or expired. */
  use(token: string, now: number): Session | undefined {
    this.expire(now);
    const s = this.byToken.get(token);
    if (s) s.lastUsed = now;
    return s;
  }

  /** The sessions of these credentials (what one BMC's Sessions collection shows its user). */
  listFor(c: SystemCredentials, now: number): Session[] {
    this.expire(now);
    return [...this.byToken.values()].filter(
      (s) => s.credentials.username === c.username && s.credentials.password === c.password,
    );
  }

  find(id: string): Session | undefined {
    for (const s of this.byToken.values()) if (s.id === id) return s;
    return undefined;
  }

  delete(id: string): boolean {
    const s = this.find(id);
    if (s) this.byToken.delete(s.token);
    return s !== undefined;
  }

  private expire(now: number): void {
    for (const [token, s] of this.byToken) if (now - s.lastUsed > this.timeoutMs) this.byToken.delete(token);
  }
}
