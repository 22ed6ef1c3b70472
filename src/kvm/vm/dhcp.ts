// The DHCP answers that hand the pod's address to its VM (RFC 2131/2132, the
// few options a guest needs): one lease, for one MAC, forever. Pure: a request's
// bytes in, the reply's bytes out, or nothing for anyone else's request.

export interface Lease {
  /** The guest's MAC, lower-case, colon-separated. */
  mac: string;
  ip: string;
  prefix: number;
  router?: string;
  dns: string[];
  mtu: number;
  hostname: string;
}

export interface DhcpRequest {
  xid: number;
  mac: string;
  type: number;
  flags: number;
  /** Option 50, or ciaddr when renewing. */
  requestedIp?: string;
}

export const DHCP = {
  discover: 1,
  offer: 2,
  request: 3,
  decline: 4,
  ack: 5,
  nak: 6,
  release: 7,
  inform: 8,
} as const;
const MAGIC = 0x63825363;
const OPT = {
  mask: 1,
  router: 3,
  dns: 6,
  hostname: 12,
  mtu: 26,
  requested: 50,
  lease: 51,
  type: 53,
  server: 54,
  end: 255,
};
/** Infinite: the address is the pod's for the pod's life, so the guest never renews. */
const FOREVER = 0xffffffff;

const ipBytes = (ip: string) => Buffer.from(ip.split('.').map(Number));
const ipText = (b: Buffer) => [...b].join('.');

export function parseRequest(msg: Buffer): DhcpRequest | undefined {
  if (msg.length < 240 || msg[0] !== 1 || msg.readUInt32BE(236) !== MAGIC) return undefined;
  const mac = [...msg.subarray(28, 28 + (msg[2] ?? 6))].map((b) => b.toString(16).padStart(2, '0')).join(':');
  let type: number | undefined;
  let requestedIp: string | undefined;
  for (let i = 240; i < msg.length; ) {
    const code = msg[i] ?? OPT.end;
    if (code === OPT.end) break;
    if (code === 0) {
      i++;
      continue;
    }
    const len = msg[i + 1] ?? 0;
    const value = msg.subarray(i + 2, i + 2 + len);
    if (code === OPT.type) type = value[0];
    if (code === OPT.requested && len === 4) requestedIp = ipText(value);
    i += 2 + len;
  }
  if (type === undefined) return undefined;
  const ciaddr = ipText(msg.subarray(12, 16));
  if (!requestedIp && ciaddr !== '0.0.0.0') requestedIp = ciaddr;
  return {
    xid: msg.readUInt32BE(4),
    mac,
    type,
    flags: msg.readUInt16BE(10),
    ...(requestedIp ? { requestedIp } : {}),
  };
}

/** The reply's type for a request of the leased MAC; undefined for anything else. */
export function replyType(req: DhcpRequest, lease: Lease): number | undefined {
  if (req.mac !== lease.mac.toLowerCase()) return undefined;
  if (req.type === DHCP.discover) return DHCP.offer;
  if (req.type === DHCP.request)
    return !req.requestedIp || req.requestedIp === lease.ip ? DHCP.ack : DHCP.nak;
  return undefined;
}

export function prefixMask(prefix: number): string {
  const m = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return [24, 16, 8, 0].map((s) => (m >>> s) & 255).join('.');
}

function option(code: number, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([code, value.length]), value]);
}

/** The reply to `req` (an OFFER, ACK or NAK), or undefined when it is not the lease's MAC's to answer. */
export function dhcpReply(reqBytes: Buffer, lease: Lease, serverId: string): Buffer | undefined {
  const req = parseRequest(reqBytes);
  if (!req) return undefined;
  const type = replyType(req, lease);
  if (type === undefined) return undefined;
  const head = Buffer.alloc(240);
  head[0] = 2;
  head[1] = 1;
  head[2] = 6;
  head.writeUInt32BE(req.xid, 4);
  head.writeUInt16BE(req.flags, 10);
  if (type !== DHCP.nak) ipBytes(lease.ip).copy(head, 16);
  reqBytes.subarray(28, 44).copy(head, 28);
  head.writeUInt32BE(MAGIC, 236);
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
  };
  const u16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(n);
    return b;
  };
  const options =
    type === DHCP.nak
      ? [option(OPT.type, Buffer.from([type])), option(OPT.server, ipBytes(serverId))]
      : [
          option(OPT.type, Buffer.from([type])),
          option(OPT.server, ipBytes(serverId)),
          option(OPT.lease, u32(FOREVER)),
          option(OPT.mask, ipBytes(prefixMask(lease.prefix))),
          ...(lease.router ? [option(OPT.router, ipBytes(lease.router))] : []),
          ...(lease.dns.length > 0 ? [option(OPT.dns, Buffer.concat(lease.dns.map(ipBytes)))] : []),
          option(OPT.mtu, u16(lease.mtu)),
          option(OPT.hostname, Buffer.from(lease.hostname)),
        ];
  return Buffer.concat([head, ...options, Buffer.from([OPT.end])]);
}
