// A host's BMC credentials, from the Secret its spec.bmc.credentialsName names
// (keys "username" and "password", in the host's namespace, as metal3 reads
// them). As metal3 does, a Secret read for a host is labelled
// environment.metal3.io=baremetal, and the controller watches only Secrets so
// labelled: the cache holds the BMC passwords, not every Secret of every
// namespace, and a fixed or rotated Secret wakes its hosts at once. A Secret
// the cache holds is read from it; one not yet labelled is read from the API
// server (when a host registers, when its BMC refuses what we hold, and at
// least every REREAD_MS) and labelled.
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { Secrets } from '../../runtime/resources.ts';
import type { RedfishCredentials } from '../redfish/client.ts';

const REREAD_MS = 10 * 60_000;

/** metal3's label on the Secrets its hosts use; the controller watches Secrets with it. */
export const CREDENTIALS_LABEL = 'environment.metal3.io';
export const CREDENTIALS_LABEL_VALUE = 'baremetal';

/** A Secret the watch holds, if it holds it. */
export type CachedSecret = (namespace: string, name: string) => V1Secret | undefined;

export interface Credentials extends RedfishCredentials {
  /** The Secret's resourceVersion: status.goodCredentials.credentialsVersion. */
  version: string;
}

export class CredentialsError extends Error {}

interface Held {
  credentials: Credentials;
  readAt: number;
}

export class CredentialsStore {
  private readonly held = new Map<string, Held>();
  private readonly client: KubeClient;
  private readonly now: () => number;

  private readonly cached: CachedSecret;

  constructor(client: KubeClient, cached: CachedSecret = () => undefined, now: () => number = Date.now) {
    this.client = client;
    this.cached = cached;
    this.now = now;
  }

  /** The credentials for a host; `fresh` skips what is held (after a refusal, or to register). */
  async get(namespace: string, name: string, fresh: boolean): Promise<Credentials> {
    const watched = this.cached(namespace, name);
    if (watched) return credentialsIn(watched, namespace, name);
    const key = `${namespace}/${name}`;
    const held = this.held.get(key);
    if (held && !fresh && this.now() - held.readAt < REREAD_MS) return held.credentials;
    const credentials = await this.read(namespace, name);
    this.held.set(key, { credentials, readAt: this.now() });
    return credentials;
  }

  forget(namespace: string, name: string): void {
    this.held.delete(`${namespace}/${name}`);
  }

  private async read(namespace: string, name: string): Promise<Credentials> {
    let secret: V1Secret;
    try {
      secret = await this.client.get<V1Secret>(Secrets, name, namespace);
    } catch (err) {
      if (isNotFound(err))
        throw new CredentialsError(`the credentials Secret ${namespace}/${name} does not exist`);
      throw err;
    }
    await this.label(secret, namespace, name);
    return credentialsIn(secret, namespace, name);
  }

  /** Labels the Secret so the watch holds it from now on; a failure only costs the watch. */
  private async label(secret: V1Secret, namespace: string, name: string): Promise<void> {
    if (secret.metadata?.labels?.[CREDENTIALS_LABEL] === CREDENTIALS_LABEL_VALUE) return;
    const labels = { [CREDENTIALS_LABEL]: CREDENTIALS_LABEL_VALUE };
    await this.client
      .patch(Secrets, name, namespace, { metadata: { labels } }, { type: 'merge' })
      .catch(() => undefined);
  }
}

function credentialsIn(secret: V1Secret, namespace: string, name: string): Credentials {
  const field = (k: string) => {
    const v = secret.data?.[k];
    return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
  };
  const username = field('username');
  const password = field('password');
  const missing = [username ? '' : 'username', password ? '' : 'password'].filter(Boolean);
  if (missing.length > 0) {
    throw new CredentialsError(`the credentials Secret ${namespace}/${name} has no ${missing.join(' or ')}`);
  }
  return { username: username!, password: password!, version: secret.metadata?.resourceVersion ?? '' };
}
