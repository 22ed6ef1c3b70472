// metal3's BMC address forms for Redfish, read the way metal3 reads them so a
// host written for metal3 means the same here:
//   redfish://HOST[:PORT]/redfish/v1/Systems/ID            HTTPS
//   redfish+http://… and redfish+https://…                 the transport named
//   redfish-virtualmedia://…, redfish-virtualmedia+http(s)://…  the same, booting by virtual media
// Other drivers metal3 knows (ipmi://, idrac://, ilo5://, …) are refused with
// a message that names the forms nodewarden speaks.

export interface RedfishAddress {
  /** https://HOST:PORT or http://HOST:PORT. */
  origin: string;
  /** The System's path, e.g. /redfish/v1/Systems/1. */
  systemPath: string;
  /** Whether the address asks for virtual-media boot (redfish-virtualmedia). */
  virtualMedia: boolean;
}

const SCHEMES: Record<string, { transport: 'http' | 'https'; virtualMedia: boolean }> = {
  redfish: { transport: 'https', virtualMedia: false },
  'redfish+https': { transport: 'https', virtualMedia: false },
  'redfish+http': { transport: 'http', virtualMedia: false },
  'redfish-virtualmedia': { transport: 'https', virtualMedia: true },
  'redfish-virtualmedia+https': { transport: 'https', virtualMedia: true },
  'redfish-virtualmedia+http': { transport: 'http', virtualMedia: true },
};

export class BmcAddressError extends Error {}

/** Parses a BMC address; throws BmcAddressError saying what is wrong and what is accepted. */
export function parseBmcAddress(address: string): RedfishAddress {
  const m = /^([a-z0-9+-]+):\/\/(.*)$/i.exec(address.trim());
  if (!m)
    throw new BmcAddressError(
      `BMC address "${address}" has no scheme: write redfish://HOST[:PORT]/redfish/v1/Systems/ID`,
    );
  const scheme = m[1]!.toLowerCase();
  const kind = SCHEMES[scheme];
  if (!kind) {
    throw new BmcAddressError(
      `BMC address scheme "${scheme}" is not supported: nodewarden speaks Redfish ` +
        `(${Object.keys(SCHEMES).join(', ')})`,
    );
  }
  let url: URL;
  try {
    url = new URL(`${kind.transport}://${m[2]}`);
  } catch {
    throw new BmcAddressError(`BMC address "${address}" is not a valid URL`);
  }
  if (!url.hostname) throw new BmcAddressError(`BMC address "${address}" names no host`);
  const path = url.pathname.replace(/\/+$/, '');
  // metal3 accepts a bare host and finds the one System; we need its path.
  if (!/^\/redfish\/v1\/Systems\/[^/]+$/.test(path)) {
    throw new BmcAddressError(
      `BMC address "${address}" must name a System: …/redfish/v1/Systems/ID (got path "${path || '/'}")`,
    );
  }
  return { origin: url.origin, systemPath: path, virtualMedia: kind.virtualMedia };
}
