// The tenant capability's operator flags and the options they give.
import type { FlagValues, OperatorFlag } from '../capability.ts';

export interface TenantOptions {
  /** Also write the anchor's sip.airshipit.org/* labels on claimed hosts (Treasuremap #172). */
  sipCompatibleLabels: boolean;
  /** TenantClusters reconciled at once. */
  workers: number;
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
];

export async function tenantOptions(flags: FlagValues): Promise<TenantOptions> {
  const raw = String(flags['tenant-workers'] ?? '8');
  const workers = Number(raw);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64)
    throw new Error(`--tenant-workers: "${raw}" is not a whole number from 1 to 64`);
  return { sipCompatibleLabels: flags['sip-compatible-labels'] === true, workers };
}
