// Shortfalls in words, for the Scheduled condition and `tenant status`:
// which role is short by how many, and why the other hosts were passed over.
import type { PassedOver, Shortfall } from './planner.ts';

const WHY: Record<keyof PassedOver, string> = {
  selector: 'not matching the labelSelector',
  claimed: 'already claimed',
  unhealthy: 'unhealthy',
  noNetworkData: 'without usable network data or BMC credentials',
  topology: 'in a topology domain already used',
};

export function describeShortfall(s: Shortfall): string {
  const reasons = (Object.keys(WHY) as (keyof PassedOver)[])
    .filter((k) => s.passedOver[k] > 0)
    .map(
      (k) => `${s.passedOver[k]} ${WHY[k]}${k === 'topology' && s.topologyKey ? ` (${s.topologyKey})` : ''}`,
    );
  return `${s.role}: short by ${s.short} of ${s.wanted}${reasons.length ? ` (${reasons.join(', ')})` : ' (no hosts)'}`;
}

export function describeShortfalls(list: readonly Shortfall[]): string {
  return list.map(describeShortfall).join('; ');
}
