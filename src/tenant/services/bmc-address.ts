// Where the jump host reaches a host's BMC, from the one reading of metal3's
// address forms (src/api/bmc-address.ts). As in the anchor the address is
// the URL's host with any port kept and the path dropped; unlike it we keep
// the System id and the scheme too, so the jump host's `host reboot` can
// speak Redfish to the right System.
import { parseBmcAddress } from '../../api/bmc-address.ts';

export interface BmcEndpoint {
  /** HOST[:PORT], IPv6 in brackets. */
  address: string;
  /** The metal3 driver: redfish, idrac-virtualmedia, ipmi, … */
  driver: string;
  /** Whether the jump host can reboot it over Redfish. */
  redfish: boolean;
  /** Redfish over TLS (every redfish form but +http). */
  tls: boolean;
  /** The Redfish System id, the last path segment after /Systems/. */
  system?: string;
}

/**
 * @param loopbackAt where the jump host's pod reaches the operator's machine, for a BMC on its
 *   loopback (127.0.0.1): a pod's own loopback is not the operator's. Unset, addresses stay as written.
 */
export function bmcEndpoint(address: string, loopbackAt?: string): BmcEndpoint {
  const a = parseBmcAddress(address);
  // A Redfish scheme on something that is not a URL cannot be spoken to.
  const redfish = a.redfish && a.origin !== undefined;
  const authority =
    loopbackAt && a.host === '127.0.0.1' ? a.authority.replace(/^127\.0\.0\.1/, loopbackAt) : a.authority;
  const endpoint: BmcEndpoint = { address: authority, driver: a.driver, redfish, tls: redfish && a.tls };
  if (redfish && a.system) endpoint.system = a.system;
  return endpoint;
}
