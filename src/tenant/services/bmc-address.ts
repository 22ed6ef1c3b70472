// Where the jump host reaches a host's BMC, from metal3's address forms
// (redfish://HOST[:PORT]/redfish/v1/Systems/ID, redfish+http://…,
// idrac-virtualmedia://…, ipmi://HOST[:PORT], or a bare HOST[:PORT] for IPMI).
// As in the anchor the address is the URL's host with any port kept and the
// path dropped; unlike it we keep the System id and the scheme too, so the
// jump host's `host reboot` can speak Redfish to the right System.

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

export function bmcEndpoint(address: string): BmcEndpoint {
  const scheme = /^([a-z0-9][a-z0-9+.-]*):\/\//i.exec(address);
  if (!scheme) return { address: address.replace(/\/.*$/, ''), driver: 'ipmi', redfish: false, tls: false };
  const [driver = '', transport] = scheme[1]!.toLowerCase().split('+');
  let url: URL;
  try {
    // URL only splits host from path for schemes it knows.
    url = new URL(`https://${address.slice(scheme[0].length)}`);
  } catch {
    return {
      address: address.slice(scheme[0].length).replace(/\/.*$/, ''),
      driver,
      redfish: false,
      tls: false,
    };
  }
  const redfish = driver.includes('redfish') || driver.endsWith('virtualmedia');
  const system = /\/Systems\/([^/]+)\/?$/.exec(decodeURIComponent(url.pathname))?.[1];
  // The authority as written: URL would drop a port that is the scheme's default.
  const authority = address.slice(scheme[0].length).split(/[/?#]/)[0]!.replace(/^.*@/, '');
  const endpoint: BmcEndpoint = { address: authority, driver, redfish, tls: redfish && transport !== 'http' };
  if (redfish && system) endpoint.system = system;
  return endpoint;
}
