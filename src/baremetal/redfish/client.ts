// A Redfish client for the few calls the host controller makes: read a System
// and its NICs, reset it, set a one-time boot source, insert and eject virtual
// media. Our own code over node:http(s): the calls are a handful of JSON
// requests, and what matters is that every failure comes back as a BmcError
// whose kind the controller can switch on (unreachable, refused credentials,
// gone, an action that failed) with the BMC's own message kept. HTTP basic
// auth on every request: stateless, so a controller restart or a BMC reboot
// never leaves a dead session behind. One keep-alive agent per transport and
// verification setting serves every BMC, so 500 hosts cost a few sockets each.
import http from 'node:http';
import https from 'node:https';
import type { RedfishAddress } from './address.ts';

export type BmcErrorKind = 'unreachable' | 'credentials' | 'not-found' | 'action-failed' | 'protocol';

export class BmcError extends Error {
  readonly kind: BmcErrorKind;
  readonly status: number | undefined;

  constructor(kind: BmcErrorKind, message: string, status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
  }
}

export interface RedfishCredentials {
  username: string;
  password: string;
}

export interface RedfishTarget {
  address: RedfishAddress;
  credentials: RedfishCredentials;
  /** metal3's disableCertificateVerification. */
  insecure: boolean;
}

export type ResetType = 'On' | 'ForceOff' | 'GracefulShutdown' | 'GracefulRestart' | 'ForceRestart';

export interface SystemInfo {
  id: string;
  powerState: string;
  cpuCount?: number;
  cpuModel?: string;
  memoryMiB?: number;
  manufacturer?: string;
  model?: string;
  serialNumber?: string;
  hostname?: string;
  managerPath?: string;
  nicsPath?: string;
}

export interface NicInfo {
  name: string;
  mac: string;
  ip?: string;
  speedGbps?: number;
}

type Json = Record<string, unknown>;

const TIMEOUT_MS = 10_000;
const agents = new Map<string, http.Agent>();

function agentFor(origin: string, insecure: boolean): http.Agent {
  const tls = origin.startsWith('https:');
  const key = `${tls}/${insecure}`;
  let agent = agents.get(key);
  if (!agent) {
    const opts = { keepAlive: true, maxSockets: 32, maxFreeSockets: 8 };
    agent = tls ? new https.Agent({ ...opts, rejectUnauthorized: !insecure }) : new http.Agent(opts);
    agents.set(key, agent);
  }
  return agent;
}

/** The first Redfish message in an error body, for BmcError messages. */
function redfishMessage(body: string): string | undefined {
  try {
    const err = (JSON.parse(body) as Json).error as Json | undefined;
    const info = (err?.['@Message.ExtendedInfo'] as Json[] | undefined)?.[0]?.Message;
    return (typeof info === 'string' && info) || (typeof err?.message === 'string' ? err.message : undefined);
  } catch {
    return undefined;
  }
}

export class RedfishClient {
  private readonly target: RedfishTarget;

  constructor(target: RedfishTarget) {
    this.target = target;
  }

  private get where(): string {
    return `${this.target.address.origin}${this.target.address.systemPath}`;
  }

  private request(method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
    const { origin } = this.target.address;
    const url = new URL(path, origin);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const { username, password } = this.target.credentials;
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
    };
    const lib = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = lib.request(
        url,
        { method, headers, agent: agentFor(origin, this.target.insecure), timeout: TIMEOUT_MS },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => reject(new BmcError('unreachable', `BMC at ${origin}: ${err.message}`)));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve({ status, json: text ? (JSON.parse(text) as Json) : {} });
              } catch {
                reject(
                  new BmcError(
                    'protocol',
                    `BMC at ${origin} answered ${method} ${path} with no JSON`,
                    status,
                  ),
                );
              }
              return;
            }
            reject(this.httpError(method, path, status, redfishMessage(text)));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
      req.on('error', (err: NodeJS.ErrnoException) =>
        reject(new BmcError('unreachable', `BMC at ${origin} is unreachable: ${err.code ?? err.message}`)),
      );
      req.end(payload);
    });
  }

  private httpError(method: string, path: string, status: number, detail: string | undefined): BmcError {
    const said = detail ? `: ${detail}` : '';
    if (status === 401 || status === 403) {
      return new BmcError(
        'credentials',
        `BMC at ${this.target.address.origin} refused the credentials (HTTP ${status})${said}`,
        status,
      );
    }
    if (status === 404) return new BmcError('not-found', `BMC has no ${path} (HTTP 404)${said}`, status);
    const kind = method === 'GET' ? 'protocol' : 'action-failed';
    return new BmcError(kind, `BMC ${method} ${path} failed with HTTP ${status}${said}`, status);
  }

  async system(): Promise<SystemInfo> {
    const { json: s } = await this.request('GET', this.target.address.systemPath);
    const proc = s.ProcessorSummary as Json | undefined;
    const mem = s.MemorySummary as Json | undefined;
    const gib = typeof mem?.TotalSystemMemoryGiB === 'number' ? mem.TotalSystemMemoryGiB : undefined;
    const managedBy = ((s.Links as Json | undefined)?.ManagedBy as Json[] | undefined)?.[0]?.['@odata.id'];
    const nics = (s.EthernetInterfaces as Json | undefined)?.['@odata.id'];
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return {
      id: str(s.Id) ?? '',
      powerState: str(s.PowerState) ?? 'Unknown',
      ...(typeof proc?.Count === 'number' ? { cpuCount: proc.Count } : {}),
      ...(str(proc?.Model) ? { cpuModel: str(proc?.Model) } : {}),
      ...(gib !== undefined ? { memoryMiB: Math.round(gib * 1024) } : {}),
      ...(str(s.Manufacturer) ? { manufacturer: str(s.Manufacturer) } : {}),
      ...(str(s.Model) ? { model: str(s.Model) } : {}),
      ...(str(s.SerialNumber) ? { serialNumber: str(s.SerialNumber) } : {}),
      ...(str(s.HostName) ? { hostname: str(s.HostName) } : {}),
      ...(str(managedBy) ? { managerPath: str(managedBy) } : {}),
      ...(str(nics) ? { nicsPath: str(nics) } : {}),
    };
  }

  /** The System's NICs, in the order the BMC lists them. */
  async nics(system: SystemInfo): Promise<NicInfo[]> {
    if (!system.nicsPath) return [];
    const { json: coll } = await this.request('GET', system.nicsPath);
    const members = (coll.Members as Json[] | undefined) ?? [];
    const out: NicInfo[] = [];
    for (const m of members) {
      const { json: n } = await this.request('GET', String(m['@odata.id']));
      const v4 = (n.IPv4Addresses as Json[] | undefined)?.[0]?.Address;
      const v6 = (n.IPv6Addresses as Json[] | undefined)?.[0]?.Address;
      const ip = typeof v4 === 'string' ? v4 : typeof v6 === 'string' ? v6 : undefined;
      const mbps = typeof n.SpeedMbps === 'number' ? n.SpeedMbps : undefined;
      out.push({
        name: String(n.Name ?? n.Id ?? ''),
        mac: String(n.MACAddress ?? '').toLowerCase(),
        ...(ip ? { ip } : {}),
        ...(mbps !== undefined ? { speedGbps: Math.round(mbps / 1000) } : {}),
      });
    }
    return out;
  }

  async reset(type: ResetType): Promise<void> {
    await this.request('POST', `${this.target.address.systemPath}/Actions/ComputerSystem.Reset`, {
      ResetType: type,
    });
  }

  /** Boots once from `target` ("Cd", "Pxe", "Hdd") at the next power-on. */
  async bootOnce(target: string): Promise<void> {
    await this.request('PATCH', this.target.address.systemPath, {
      Boot: { BootSourceOverrideTarget: target, BootSourceOverrideEnabled: 'Once' },
    });
  }

  /** The System's virtual CD drive: the manager's first VirtualMedia member that takes a CD. */
  private async virtualCd(system: SystemInfo): Promise<string> {
    if (!system.managerPath)
      throw new BmcError('protocol', `${this.where} names no manager (Links.ManagedBy)`);
    const { json: mgr } = await this.request('GET', system.managerPath);
    const collPath = (mgr.VirtualMedia as Json | undefined)?.['@odata.id'];
    if (typeof collPath !== 'string')
      throw new BmcError('protocol', `${system.managerPath} has no VirtualMedia`);
    const { json: coll } = await this.request('GET', collPath);
    for (const m of (coll.Members as Json[] | undefined) ?? []) {
      const path = String(m['@odata.id']);
      const { json: media } = await this.request('GET', path);
      const types = (media.MediaTypes as unknown[] | undefined) ?? [];
      if (types.length === 0 || types.some((t) => t === 'CD' || t === 'DVD')) return path;
    }
    throw new BmcError('protocol', `${collPath} has no CD or DVD drive`);
  }

  async insertMedia(system: SystemInfo, image: string): Promise<void> {
    const cd = await this.virtualCd(system);
    await this.request('POST', `${cd}/Actions/VirtualMedia.InsertMedia`, { Image: image, Inserted: true });
  }

  async ejectMedia(system: SystemInfo): Promise<void> {
    const cd = await this.virtualCd(system);
    await this.request('POST', `${cd}/Actions/VirtualMedia.EjectMedia`, {});
  }
}
