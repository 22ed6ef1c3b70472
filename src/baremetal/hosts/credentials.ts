// A host's BMC credentials, from the Secret its spec.bmc.credentialsName names
// (keys "username" and "password", in the host's namespace, as metal3 reads
// them). Kept in memory by Secret rather than through a Secret informer: a
// cluster-wide Secret cache would hold every Secret of every namespace for a
// handful of BMC passwords. A Secret is read again when a host registers, when
// its BMC refuses what we hold, and at least every REREAD_MS, so a rotated
// password is picked up without a watch.
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeClient } from '../../runtime/client.ts';
import { isNotFound } from '../../runtime/errors.ts';
import { Secrets } from '../../runtime/resources.ts';
import type { RedfishCredentials } from '../redfish/client.ts';

const REREAD_MS = 10 * 60_000;

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

  constructor(client: KubeClient, now: () => number = Date.now) {
    this.client = client;
    this.now = now;
  }

  /** The credentials for a host; `fresh` skips what is held (after a refusal, or to register). */
  async get(namespace: string, name: string, fresh: boolean): Promise<Credentials> {
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
    const field = (k: string) => {
      const v = secret.data?.[k];
      return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
    };
    const username = field('username');
    const password = field('password');
    const missing = [username ? '' : 'username', password ? '' : 'password'].filter(Boolean);
    if (missing.length > 0) {
      throw new CredentialsError(
        `the credentials Secret ${namespace}/${name} has no ${missing.join(' or ')}`,
      );
    }
    return { username: username!, password: password!, version: secret.metadata?.resourceVersion ?? '' };
  }
}
