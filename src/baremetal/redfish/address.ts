// A BareMetalHost's BMC address as the Redfish client needs it: the one
// reading of metal3's forms (src/api/bmc-address.ts), with what is not
// Redfish refused by a message that names the forms nodewarden speaks.
import { parseBmcAddress, REDFISH_SCHEMES } from '../../api/bmc-address.ts';

export interface RedfishAddress {
  /** https://HOST:PORT or http://HOST:PORT. */
  origin: string;
  /** The System's path, e.g. /redfish/v1/Systems/1. */
  systemPath: string;
  /** Whether the address asks for virtual-media boot (redfish-virtualmedia). */
  virtualMedia: boolean;
}

export class BmcAddressError extends Error {}

/** The Redfish System an address names; throws BmcAddressError saying what is wrong and what is accepted. */
export function redfishAddress(address: string): RedfishAddress {
  const a = parseBmcAddress(address);
  if (a.scheme === undefined)
    throw new BmcAddressError(
      `BMC address "${address}" has no scheme: write redfish://HOST[:PORT]/redfish/v1/Systems/ID`,
    );
  if (!a.redfish)
    throw new BmcAddressError(
      `BMC address scheme "${a.scheme}" is not supported: nodewarden speaks Redfish (${REDFISH_SCHEMES.join(', ')})`,
    );
  if (a.origin === undefined || a.path === undefined)
    throw new BmcAddressError(`BMC address "${address}" is not a valid URL`);
  if (!a.host) throw new BmcAddressError(`BMC address "${address}" names no host`);
  // metal3 accepts a bare host and finds the one System; we need its path.
  if (a.system === undefined)
    throw new BmcAddressError(
      `BMC address "${address}" must name a System: …/redfish/v1/Systems/ID (got path "${a.path || '/'}")`,
    );
  return { origin: a.origin, systemPath: a.path, virtualMedia: a.virtualMedia };
}
