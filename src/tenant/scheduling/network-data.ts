// A host's addresses from its network-data Secret: OpenStack network_data
// (the format metal3 hands to the config drive), as JSON or YAML, read as
// networks[].id → networks[].ip_address — what SIP reads, by interface id.
import { parse as parseYaml } from 'yaml';

export class NetworkDataError extends Error {}

/** Interface id → IP of every network that carries an address. Throws NetworkDataError when unreadable. */
export function addressesFromNetworkData(text: string): Record<string, string> {
  let doc: unknown;
  try {
    // YAML is a superset of JSON, so one parser reads both.
    doc = parseYaml(text);
  } catch (err) {
    throw new NetworkDataError(`network data is neither JSON nor YAML: ${(err as Error).message}`);
  }
  const networks = (doc as { networks?: unknown } | null)?.networks;
  if (!Array.isArray(networks)) throw new NetworkDataError('network data has no networks list');
  const out: Record<string, string> = {};
  for (const n of networks as Array<Record<string, unknown>>) {
    if (typeof n?.id === 'string' && typeof n.ip_address === 'string' && n.ip_address) {
      out[n.id] = n.ip_address;
    }
  }
  return out;
}
