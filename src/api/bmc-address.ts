// BareMetalHost.spec.bmc.address, read once for everyone who reads it: the
// forms metal3 knows, each taken apart the same way, so a host written for
// metal3 means the same to the baremetal capability's Redfish client and to
// the tenant's jump host. Each of them asks the answer what it needs (the
// Redfish client refuses what is not Redfish; the jump host reads the host
// and port). Forms:
//   HOST[:PORT]                                    IPMI (metal3's default)
//   ipmi://HOST[:PORT]
//   redfish://HOST[:PORT]/redfish/v1/Systems/ID    Redfish over HTTPS
//   DRIVER+http://…, DRIVER+https://…              the transport named
//   redfish-virtualmedia, idrac-redfish, idrac-virtualmedia, ilo5-redfish: Redfish too
//   idrac://, ilo4://, ilo5://, irmc://, …         vendor protocols, not Redfish

/** metal3's drivers that speak Redfish, and whether they boot by virtual media. */
const REDFISH_DRIVERS: Record<string, { virtualMedia: boolean }> = {
  redfish: { virtualMedia: false },
  'redfish-virtualmedia': { virtualMedia: true },
  'idrac-redfish': { virtualMedia: false },
  'idrac-virtualmedia': { virtualMedia: true },
  'ilo5-redfish': { virtualMedia: false },
};

/** Every scheme that names a Redfish driver, for messages that say what is accepted. */
export const REDFISH_SCHEMES: readonly string[] = Object.keys(REDFISH_DRIVERS).flatMap((d) => [
  d,
  `${d}+https`,
  `${d}+http`,
]);

export interface BmcAddress {
  /** The scheme, lower-cased; undefined for a bare HOST[:PORT]. */
  scheme: string | undefined;
  /** The metal3 driver: the scheme before any "+transport"; "ipmi" for a bare host. */
  driver: string;
  /** Whether the scheme names a driver that speaks Redfish (one of REDFISH_SCHEMES). */
  redfish: boolean;
  /** Whether the driver boots by virtual media. */
  virtualMedia: boolean;
  /** Redfish over TLS: every Redfish scheme but DRIVER+http. */
  tls: boolean;
  /** HOST[:PORT] as written (a port that is the scheme's default kept), IPv6 in brackets, without credentials. */
  authority: string;
  /** The host alone, IPv6 in brackets; "" when the address names none. */
  host: string;
  /** The port, when the address writes one. */
  port?: number;
  /** For a URL form: its origin, scheme http or https as the transport says (a default port dropped). */
  origin?: string;
  /** For a URL form: its path without trailing slashes ("" for none). */
  path?: string;
  /** The Redfish System id when the path is /redfish/v1/Systems/ID. */
  system?: string;
}

const SCHEME = /^([a-z0-9][a-z0-9+.-]*):\/\/(.*)$/i;

/** Takes a BMC address apart; never throws (a URL form that does not read as a URL has no origin). */
export function parseBmcAddress(address: string): BmcAddress {
  const written = address.trim();
  const m = SCHEME.exec(written);
  if (!m)
    return {
      ...place(written),
      scheme: undefined,
      driver: 'ipmi',
      redfish: false,
      virtualMedia: false,
      tls: false,
    };
  const scheme = m[1]!.toLowerCase();
  const driver = scheme.split('+')[0]!;
  const redfish = REDFISH_SCHEMES.includes(scheme);
  const tls = redfish && !scheme.endsWith('+http');
  const parsed: BmcAddress = {
    ...place(m[2]!),
    scheme,
    driver,
    redfish,
    virtualMedia: redfish && REDFISH_DRIVERS[driver]!.virtualMedia,
    tls,
  };
  let url: URL;
  try {
    url = new URL(`${scheme.endsWith('+http') ? 'http' : 'https'}://${m[2]}`);
  } catch {
    return parsed;
  }
  parsed.host = url.hostname;
  parsed.origin = url.origin;
  parsed.path = url.pathname.replace(/\/+$/, '');
  const system = /^\/redfish\/v1\/Systems\/([^/]+)$/.exec(parsed.path)?.[1];
  if (system) parsed.system = decodeURIComponent(system);
  return parsed;
}

/** The authority, host and port of what follows the scheme, as written. */
function place(rest: string): Pick<BmcAddress, 'authority' | 'host' | 'port'> {
  const authority = rest.split(/[/?#]/)[0]!.replace(/^.*@/, '');
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(authority);
  if (!m) return { authority, host: '' };
  return m[2] === undefined ? { authority, host: m[1]! } : { authority, host: m[1]!, port: Number(m[2]) };
}
