// The tenant capability's operator flags and the options they give.
import type { FlagValues, OperatorFlag } from '../capability.ts';

export interface TenantOptions {
  /** Also write the anchor's sip.airshipit.org/* labels on claimed hosts (Treasuremap #172). */
  sipCompatibleLabels: boolean;
  /** TenantClusters reconciled at once. */
  workers: number;
  /** Where jump hosts reach a BMC address on 127.0.0.1, the operator's loopback; unset, as written. */
  jumpHostLoopbackAt?: string;
}

export const tenantFlags: OperatorFlag[] = [
  {
    name: 'sip-compatible-labels',
    type: 'boolean',
    default: false,
    help: "also label claimed hosts with Airship SIP's sip.airshipit.org/cluster-namespace,\ncluster-name and node-type, so Cluster API host selectors written for SIP keep working",
  },
  {
    name: 'tenant-workers',
    type: 'string',
    placeholder: 'N',
    default: '8',
    help: "TenantClusters reconciled in parallel (claims never race: each is guarded\nby the host's resourceVersion)",
  },
  {
    name: 'jumphost-loopback-at',
    type: 'string',
    placeholder: 'ADDRESS',
    default: '',
    help: "where jump hosts reach a BMC address on 127.0.0.1 (a simulator on the operator's\nmachine): on a local cluster with real nodes, the operator out of cluster, 172.30.0.1",
  },
];

export async function tenantOptions(flags: FlagValues): Promise<TenantOptions> {
  const raw = String(flags['tenant-workers'] ?? '8');
  const workers = Number(raw);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64)
    throw new Error(`--tenant-workers: "${raw}" is not a whole number from 1 to 64`);
  const loopbackAt = String(flags['jumphost-loopback-at'] ?? '');
  if (loopbackAt && !/^(\d{1,3}\.){3}\d{1,3}$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(loopbackAt))
    throw new Error(`--jumphost-loopback-at: "${loopbackAt}" is neither an IPv4 address nor a host name`);
  return {
    sipCompatibleLabels: flags['sip-compatible-labels'] === true,
    workers,
    ...(loopbackAt ? { jumpHostLoopbackAt: loopbackAt } : {}),
  };
}
