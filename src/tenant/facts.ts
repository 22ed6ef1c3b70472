// Reads what a host's Secrets say — its addresses (network data) and its BMC
// login — for the planner and the services. Secrets are read one by one by
// name (never listed or watched: the operator needs no cluster-wide Secret
// watch) and kept a short while, so 50 clusters re-planning do not re-read them.
import { Buffer } from 'node:buffer';
import type { V1Secret } from '@kubernetes/client-node';
import type { BareMetalHost } from '../api/baremetal.ts';
import type { KubeClient } from '../runtime/client.ts';
import { isNotFound } from '../runtime/errors.ts';
import { Secrets } from '../runtime/resources.ts';
import { hostKey } from './scheduling/host-view.ts';
import { addressesFromNetworkData, NetworkDataError } from './scheduling/network-data.ts';
import type { HostFacts } from './scheduling/planner.ts';

/** A good read stays this long; a Secret fixed after a bad read is noticed sooner. */
const GOOD_TTL_MS = 60_000;
const BAD_TTL_MS = 5_000;

interface Entry {
  facts: HostFacts;
  /** The host's Secret references when read: another reference is another read. */
  refs: string;
  at: number;
}

export class HostFactsReader {
  private readonly client: KubeClient;
  private readonly entries = new Map<string, Entry>();
  private readonly inFlight = new Map<string, Promise<HostFacts>>();
  private readonly now: () => number;

  constructor(client: KubeClient, now: () => number = Date.now) {
    this.client = client;
    this.now = now;
  }

  /** The facts of each host, read where not fresh. */
  async read(hosts: readonly BareMetalHost[]): Promise<Map<string, HostFacts>> {
    const out = new Map<string, HostFacts>();
    await Promise.all(
      hosts.map(async (h) => {
        const view = { namespace: h.metadata.namespace ?? 'default', name: h.metadata.name ?? '' };
        out.set(hostKey(view), await this.one(h));
      }),
    );
    return out;
  }

  /** Already-read facts only (no API calls): what the planner may use straight away. */
  known(hosts: readonly BareMetalHost[]): Map<string, HostFacts> {
    const out = new Map<string, HostFacts>();
    for (const h of hosts) {
      const e = this.fresh(h);
      if (e)
        out.set(
          hostKey({ namespace: h.metadata.namespace ?? 'default', name: h.metadata.name ?? '' }),
          e.facts,
        );
    }
    return out;
  }

  private fresh(h: BareMetalHost): Entry | undefined {
    const key = `${h.metadata.namespace}/${h.metadata.name}`;
    const e = this.entries.get(key);
    if (!e || e.refs !== refsOf(h)) return undefined;
    const ttl = e.facts.ok ? GOOD_TTL_MS : BAD_TTL_MS;
    return this.now() - e.at < ttl ? e : undefined;
  }

  private async one(h: BareMetalHost): Promise<HostFacts> {
    const hit = this.fresh(h);
    if (hit) return hit.facts;
    // Workers planning at once ask for the same host: one read serves them all.
    const key = `${h.metadata.namespace}/${h.metadata.name}|${refsOf(h)}`;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const read = this.readSecrets(h)
      .then((facts) => {
        this.entries.set(`${h.metadata.namespace}/${h.metadata.name}`, {
          facts,
          refs: refsOf(h),
          at: this.now(),
        });
        return facts;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, read);
    return read;
  }

  private async readSecrets(h: BareMetalHost): Promise<HostFacts> {
    const ns = h.metadata.namespace ?? 'default';
    const nd = h.spec.networkData;
    if (!nd?.name) return { ok: false, reason: 'no spec.networkData' };
    if (!h.spec.bmc?.address || !h.spec.bmc.credentialsName) return { ok: false, reason: 'no spec.bmc' };
    const ndSecret = await this.secret(nd.namespace || ns, nd.name);
    if (typeof ndSecret === 'string') return { ok: false, reason: `network data: ${ndSecret}` };
    const text = ndSecret.networkData;
    if (text === undefined)
      return { ok: false, reason: `network data: Secret ${nd.name} has no key networkData` };
    let ips: Record<string, string>;
    try {
      ips = addressesFromNetworkData(text);
    } catch (err) {
      if (!(err instanceof NetworkDataError)) throw err;
      return { ok: false, reason: err.message };
    }
    const cred = await this.secret(ns, h.spec.bmc.credentialsName);
    if (typeof cred === 'string') return { ok: false, reason: `BMC credentials: ${cred}` };
    if (!cred.username || !cred.password)
      return {
        ok: false,
        reason: `BMC credentials: Secret ${h.spec.bmc.credentialsName} needs username and password`,
      };
    return {
      ok: true,
      ips,
      bmc: { address: h.spec.bmc.address, username: cred.username, password: cred.password },
    };
  }

  /** The decoded data of a Secret, or why it could not be read. */
  private async secret(namespace: string, name: string): Promise<Record<string, string> | string> {
    try {
      const s = await this.client.get<V1Secret>(Secrets, name, namespace);
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
      return out;
    } catch (err) {
      if (isNotFound(err)) return `Secret ${namespace}/${name} not found`;
      throw err;
    }
  }
}

function refsOf(h: BareMetalHost): string {
  const nd = h.spec.networkData;
  return `${nd?.namespace ?? ''}/${nd?.name ?? ''}|${h.spec.bmc?.address ?? ''}|${h.spec.bmc?.credentialsName ?? ''}`;
}
