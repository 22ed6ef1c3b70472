// The validating webhook for VirtualHostPool and IPPool: what CEL cannot say.
// CEL compares addresses for membership (cidr(...).containsIP) but cannot
// order them, so an inverted range (start after stop) — which the anchor
// accepted and then handed out nothing from — is refused here, as are a DHCP
// range too small for one node's block and a static range that overlaps the
// DHCP one. Each message names the field and says what to fix.
import { type IPPool, IPPools, type VirtualHostPool, VirtualHostPools } from '../../api/virtualhosts.ts';
import type { WebhookSpec } from '../../capability.ts';
import type { AdmissionHandler } from '../../runtime/webhook.ts';
import { onCreateOrUpdate } from '../../runtime/webhook-config.ts';
import { type Address, parseAddress } from '../ipam/address.ts';

export const VIRTUAL_HOSTS_WEBHOOK_PATH = '/validate-baremetal-nodewarden-dev-v1alpha1-virtualhosts';
export const VIRTUAL_HOSTS_WEBHOOK_NAME = 'vvirtualhosts.baremetal.nodewarden.dev';

interface Parsed {
  start: Address;
  stop: Address;
}

/** The range's problem (inverted, mixed families), or its parsed ends; unparsable ends are CEL's to report. */
function orderProblem(
  where: string,
  startField: string,
  stopField: string,
  start: string | undefined,
  stop: string | undefined,
): { problem?: string; range?: Parsed } {
  if (start === undefined || stop === undefined) return {};
  const a = parseAddress(start);
  const b = parseAddress(stop);
  if (!a || !b) return {};
  if (a.family !== b.family)
    return {
      problem: `${where}: ${startField} ${start} and ${stopField} ${stop} are of different IP families`,
    };
  if (a.value > b.value)
    return {
      problem: `${where}: ${startField} ${start} comes after ${stopField} ${stop}; swap them, the range runs from ${startField} up to ${stopField}`,
    };
  return { range: { start: a, stop: b } };
}

const overlaps = (x: Parsed, y: Parsed) => x.start.value <= y.stop.value && y.start.value <= x.stop.value;

/** Everything wrong with a pool's spec that the schema and CEL let through (empty: it is fine). */
export function virtualHostPoolProblems(pool: VirtualHostPool): string[] {
  const problems: string[] = [];
  for (const net of pool.spec?.networks ?? []) {
    const where = `spec.networks[${net.name}]`;
    const stat = orderProblem(
      where,
      'staticAllocationStart',
      'staticAllocationStop',
      net.staticAllocationStart,
      net.staticAllocationStop,
    );
    const dhcp = orderProblem(
      where,
      'dhcpAllocationStart',
      'dhcpAllocationStop',
      net.dhcpAllocationStart,
      net.dhcpAllocationStop,
    );
    if (stat.problem) problems.push(stat.problem);
    if (dhcp.problem) problems.push(dhcp.problem);
    if (dhcp.range) {
      const bits = net.instanceSubnetBitStep ?? 4;
      const size = dhcp.range.stop.value - dhcp.range.start.value + 1n;
      if (size < 1n << BigInt(bits))
        problems.push(
          `${where}: the DHCP range holds ${size} addresses, fewer than one node's block of 2^${bits} = ${1n << BigInt(bits)}; widen the range or lower instanceSubnetBitStep`,
        );
    }
    if (stat.range && dhcp.range && overlaps(stat.range, dhcp.range))
      problems.push(
        `${where}: the static range ${net.staticAllocationStart}-${net.staticAllocationStop} overlaps the DHCP range ${net.dhcpAllocationStart}-${net.dhcpAllocationStop}; make them disjoint`,
      );
  }
  const seen = new Set<string>();
  for (const f of pool.spec?.nodes ?? []) {
    if (seen.has(f.name))
      problems.push(`spec.nodes: flavor name "${f.name}" is used twice; give each flavor its own name`);
    seen.add(f.name);
    const nics = f.networkInterfaces.map((i) => i.name);
    if (f.bootInterfaceName && !nics.includes(f.bootInterfaceName))
      problems.push(
        `spec.nodes[${f.name}]: bootInterfaceName "${f.bootInterfaceName}" is not one of its networkInterfaces (${nics.join(', ')})`,
      );
  }
  return problems;
}

/** Everything wrong with an IPPool's ranges that CEL lets through. */
export function ipPoolProblems(pool: IPPool): string[] {
  const problems: string[] = [];
  (pool.spec?.ranges ?? []).forEach((r, i) => {
    const p = orderProblem(`spec.ranges[${i}]`, 'start', 'stop', r.start, r.stop).problem;
    if (p) problems.push(p);
  });
  const d = pool.spec?.dhcpRange;
  const p = d && orderProblem('spec.dhcpRange', 'start', 'stop', d.start, d.stop).problem;
  if (p) problems.push(p);
  return problems;
}

export const virtualHostsAdmission: AdmissionHandler = (req) => {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return { allowed: true };
  const obj = req.object;
  if (!obj) return { allowed: false, code: 400, message: 'request has no object' };
  const problems =
    req.kind.kind === VirtualHostPools.type.kind
      ? virtualHostPoolProblems(obj as unknown as VirtualHostPool)
      : req.kind.kind === IPPools.type.kind
        ? ipPoolProblems(obj as unknown as IPPool)
        : [];
  return problems.length === 0 ? { allowed: true } : { allowed: false, message: problems.join('; ') };
};

/** The webhook as the capability declares it. */
export const virtualHostsWebhook: WebhookSpec = {
  name: VIRTUAL_HOSTS_WEBHOOK_NAME,
  path: VIRTUAL_HOSTS_WEBHOOK_PATH,
  rules: [onCreateOrUpdate(VirtualHostPools.type, IPPools.type)],
  handler: () => virtualHostsAdmission,
};
