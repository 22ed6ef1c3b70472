// The IPAM store: the decisions of allocate.ts applied to an IPPool object.
// Every change reads the pool from the API server (not a cache, which may lag
// behind our own last write), decides, and writes it back with the
// resourceVersion it read; a conflict (another writer got there first) is
// retried by deciding again on the fresh copy, so two reconciles never hand
// out one address twice.
import { type IPPool, IPPools } from '../../api/virtualhosts.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { retryOnConflict } from '../../runtime/conflict.ts';
import { ApiError, isAlreadyExists, isNotFound } from '../../runtime/errors.ts';
import type { K8sObject } from '../../runtime/resources.ts';
import { statusEqual } from '../../runtime/status.ts';
import { type AddressRange, addRange, type IpamResult, newPool, type PoolSpec } from './allocate.ts';

const IPP = IPPools.type;

/** What a pool should at least hold: its subnet, ranges and prefix (existing ranges stay while held). */
export interface PoolWanted {
  subnet: string;
  macPrefix: string;
  range: AddressRange;
  dhcpRange?: AddressRange;
  dhcpBlockBits?: number;
}

export class IPPoolStore {
  private readonly client: Pick<KubeClient, 'get' | 'create' | 'update' | 'delete'>;
  // The retry must outlast a burst of reconciles writing the same pool.
  private readonly retry = { attempts: 10, backoffMs: 20, factor: 1.5, jitter: 0.5 };

  constructor(client: Pick<KubeClient, 'get' | 'create' | 'update' | 'delete'>) {
    this.client = client;
  }

  async get(namespace: string, name: string): Promise<IPPool | undefined> {
    try {
      return await this.client.get<IPPool>(IPP, name, namespace);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Makes sure the pool exists and holds `want`'s range (added beside earlier
   * ones, which may still be held), and answers its spec as now stored. A changed MAC prefix or a subnet that
   * cannot hold the range comes back as a failure, and nothing is written.
   */
  async ensure(
    namespace: string,
    name: string,
    want: PoolWanted,
    meta: {
      labels: Record<string, string>;
      ownerReferences: NonNullable<K8sObject['metadata']>['ownerReferences'];
    },
  ): Promise<IpamResult<undefined>> {
    return retryOnConflict(async () => {
      const current = await this.get(namespace, name);
      if (!current) {
        const made = newPool(want.subnet, want.range, want.macPrefix);
        if (!made.ok) return made;
        const spec: PoolSpec = { ...made.spec, ...dhcp(want) };
        try {
          await this.client.create(IPP, IPPools.make({ name, namespace, ...meta }, spec));
        } catch (err) {
          // Another writer made it meanwhile: go round again and extend theirs.
          if (isAlreadyExists(err))
            throw new ApiError(409, `IPPool ${name} created meanwhile`, { reason: 'Conflict' });
          throw err;
        }
        return { ok: true, spec, value: undefined };
      }
      if (current.spec.subnet !== want.subnet)
        return {
          ok: false,
          cause: 'badSubnet',
          message: `IPPool ${name} is for subnet ${current.spec.subnet}, not ${want.subnet}: the subnet cannot change`,
        } as const;
      const added = addRange(current.spec, want.range, want.macPrefix);
      if (!added.ok) return added;
      const spec: PoolSpec = { ...added.spec, ...dhcp(want) };
      if (statusEqual(spec, current.spec)) return { ok: true, spec: current.spec, value: undefined };
      await this.client.update(IPP, { ...current, spec });
      return { ok: true, spec, value: undefined };
    }, this.retry);
  }

  /**
   * Reads the pool, decides with `decide`, and writes the pool it returns
   * (when it differs). A failure writes nothing. A missing pool is a failure
   * too: the caller ensures pools before it allocates.
   */
  async change<T>(
    namespace: string,
    name: string,
    decide: (spec: PoolSpec) => IpamResult<T>,
  ): Promise<IpamResult<T>> {
    return retryOnConflict(async () => {
      const current = await this.get(namespace, name);
      if (!current)
        return {
          ok: false,
          cause: 'rangeNotRegistered',
          message: `IPPool ${namespace}/${name} does not exist`,
        } as const;
      const r = decide(current.spec);
      if (r.ok && r.spec !== current.spec && !statusEqual(r.spec, current.spec))
        await this.client.update(IPP, { ...current, spec: r.spec });
      return r;
    }, this.retry);
  }

  async delete(namespace: string, name: string): Promise<void> {
    await this.client.delete(IPP, name, namespace, { ignoreNotFound: true });
  }
}

function dhcp(want: PoolWanted): Partial<PoolSpec> {
  return want.dhcpRange ? { dhcpRange: want.dhcpRange, dhcpBlockBits: want.dhcpBlockBits ?? 4 } : {};
}
