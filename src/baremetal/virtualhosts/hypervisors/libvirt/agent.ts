// The VM host agent: one HTTPS listener (the host's loopback out of cluster,
// the node's address in its DaemonSet), with a certificate of its own (its CA
// is what clients pin), serving Redfish for the node's libvirt domains
// (src/redfish/ over redfish-backend.ts) and, under AGENT_CONSOLE, the
// define/remove/list calls the libvirt Hypervisor makes (agent-protocol.ts),
// which take the agent's own bearer token: Redfish has its per-VM logins, the
// console would otherwise be open to anyone who reaches the node. It talks to
// libvirtd through its unix socket, so libvirtd and the VMs' bridges may sit
// in a network namespace of their own.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedfishBackendError } from '../../../../redfish/backend.ts';
import { redfishHandler } from '../../../../redfish/service.ts';
import { SessionStore } from '../../../../redfish/sessions.ts';
import { HttpError, readJsonBody } from '../../../../runtime/http.ts';
import { listen } from '../../../../runtime/listen.ts';
import { type CertKeyPair, generateCa, issueServingCert } from '../../../../runtime/x509.ts';
import type { HeldVm, VmDefinition } from '../hypervisor.ts';
import { type AccelChoice, detectAccel } from './accel.ts';
import { AGENT_CONSOLE, agentPaths, type PublishedAgent } from './agent-protocol.ts';
import { libvirtBackend } from './redfish-backend.ts';
import { Virsh } from './virsh.ts';
import { type HeldDomain, LibvirtVmHost } from './vm-host.ts';

export interface VmHostAgentOptions {
  /** libvirt's URI, e.g. qemu:///system?socket=/run/…/libvirt-sock. */
  libvirtUri: string;
  /** The agent's folder: storage pool and serial logs. */
  dir: string;
  /** Where to listen: HOST:PORT. Default 127.0.0.1:0 (a free port on loopback). */
  listen?: string;
  /** The address clients are given (endpoint, Redfish addresses, the certificate's name); default the listen host, or 127.0.0.1 for a wildcard. */
  advertise?: string;
  /** Further addresses clients reach it at (a relay's, a NAT's): its certificate names them too. */
  alsoReachableAt?: readonly string[];
  /** Called once when its fixed port is held by another process and it stands by for it (see listenOrStandBy). */
  onStandBy?: (message: string) => void;
  /** Skips detection when the caller has already detected (tests starting several agents on one machine). */
  accel?: AccelChoice;
}

export class VmHostAgent {
  readonly host: LibvirtVmHost;
  readonly accel: AccelChoice;
  /** The CA clients pin (PEM). */
  readonly caPem: string;
  /** What the console takes as `Authorization: Bearer …`; made at start, given out only in the published record. */
  readonly token = randomBytes(24).toString('base64url');
  /** The address in the endpoint and the Redfish addresses. */
  readonly address: string;
  private readonly server: https.Server;
  private port = 0;

  private constructor(
    host: LibvirtVmHost,
    accel: AccelChoice,
    ca: CertKeyPair,
    address: string,
    alsoAt: readonly string[],
  ) {
    this.host = host;
    this.accel = accel;
    this.caPem = ca.cert;
    this.address = address;
    const tls = issueServingCert(ca, certificateNames(address, alsoAt));
    const redfish = redfishHandler({
      backend: libvirtBackend(host),
      sessions: new SessionStore(),
      clock: Date.now,
      identity: {
        id: `vm-host:${host.virsh.uri}`,
        name: 'nodewarden VM host agent',
        product: 'nodewarden VM host agent (libvirt)',
      },
    });
    this.server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      const path = req.url ?? '/';
      if (path === AGENT_CONSOLE || path.startsWith(`${AGENT_CONSOLE}/`)) this.console(req, res);
      else redfish(req, res);
    });
  }

  static async start(opts: VmHostAgentOptions): Promise<VmHostAgent> {
    const virsh = new Virsh(opts.libvirtUri);
    const accel = opts.accel ?? (await detectAccel(virsh));
    const host = new LibvirtVmHost({ virsh, virtType: accel.type, dir: opts.dir });
    await host.init();
    const at = opts.listen ?? '127.0.0.1:0';
    const ca = generateCa({ commonName: 'nodewarden VM host agent' });
    const address = opts.advertise ?? advertisedHost(at);
    const agent = new VmHostAgent(host, accel, ca, address, opts.alsoReachableAt ?? []);
    const addr = await listenOrStandBy(agent.server, at, opts.onStandBy ?? (() => undefined));
    agent.port = addr.port;
    return agent;
  }

  /** https://ADDRESS:PORT */
  get endpoint(): string {
    return `https://${hostPart(this.address)}:${this.port}`;
  }

  /** What the pool controller needs to reach it: endpoint, the CA to pin, the console's token. */
  get published(): PublishedAgent {
    return { endpoint: this.endpoint, caCert: this.caPem, token: this.token };
  }

  heldVm(d: HeldDomain): HeldVm {
    const id = d.record.definition.id;
    return {
      id,
      power: d.running ? 'On' : 'Off',
      redfishAddress: `redfish://${hostPart(this.address)}:${this.port}/redfish/v1/Systems/${id}`,
    };
  }

  private console(req: IncomingMessage, res: ServerResponse): void {
    this.consoleCall(req)
      .then(
        ({ status, body }) => ({ status, body }),
        (err: unknown) => {
          const status = err instanceof RedfishBackendError || err instanceof HttpError ? err.status : 500;
          return { status, body: { error: err instanceof Error ? err.message : String(err) } };
        },
      )
      .then(({ status, body }) => {
        const text = body === undefined ? '' : JSON.stringify(body);
        res.writeHead(status, { 'content-type': 'application/json' }).end(text);
      });
  }

  private async consoleCall(req: IncomingMessage): Promise<{ status: number; body?: unknown }> {
    const path = new URL(req.url ?? '/', 'https://localhost').pathname;
    const method = req.method ?? 'GET';
    // The probes' route: libvirtd answers through its socket, or the agent is not ready.
    if (path === agentPaths.healthz && method === 'GET') {
      await this.host.virsh.run(['version']).catch((err: unknown) => {
        throw new HttpError(503, `libvirtd does not answer: ${(err as Error).message}`);
      });
      return { status: 200, body: { ok: true } };
    }
    if (!bearerMatches(req.headers.authorization, this.token))
      return { status: 401, body: { error: 'the VM host agent console takes its bearer token' } };
    if (path === agentPaths.vms && method === 'GET')
      return { status: 200, body: (await this.host.list()).map((d) => this.heldVm(d)) };
    if (path === agentPaths.vms && method === 'POST') {
      const vm = (await readJsonBody(req, 1 << 20)) as VmDefinition;
      const wrong = definitionProblem(vm);
      if (wrong) return { status: 400, body: { error: wrong } };
      return { status: 200, body: this.heldVm(await this.host.define(vm)) };
    }
    const id = path.startsWith(`${agentPaths.vms}/`)
      ? decodeURIComponent(path.slice(agentPaths.vms.length + 1))
      : '';
    if (id && method === 'DELETE') {
      await this.host.remove(id);
      return { status: 204 };
    }
    return { status: 404, body: { error: `no route ${method} ${path}` } };
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header?.match(/^Bearer (.+)$/)?.[1] ?? '');
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** The listen address' host as clients should dial it: a wildcard is dialled on loopback. */
export function advertisedHost(listenAt: string): string {
  const host = listenAt.slice(0, listenAt.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1');
  return host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
}

const hostPart = (address: string) => (address.includes(':') ? `[${address}]` : address);

const positive = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n > 0;

/** What is wrong with a definition before libvirt sees it (it would name XML, not the field), or undefined. */
export function definitionProblem(vm: VmDefinition | undefined): string | undefined {
  if (!vm || typeof vm.id !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(vm.id))
    return 'id: a DNS label is needed';
  if (!positive(vm.flavor?.cpus) || !positive(vm.flavor?.memoryMiB))
    return 'flavor: cpus and memoryMiB must be whole numbers above 0';
  if (!Array.isArray(vm.disks) || vm.disks.length === 0 || !vm.disks.every((d) => positive(d?.sizeGB)))
    return 'disks: at least one, each with a sizeGB above 0';
  if (!Array.isArray(vm.nics) || !vm.nics.every((n) => /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(n?.mac ?? '')))
    return 'nics: each needs a lower-case, colon-separated MAC';
  if (typeof vm.credentials?.username !== 'string' || typeof vm.credentials?.password !== 'string')
    return 'credentials: username and password are needed';
  return undefined;
}

/** The names its certificate carries: loopback, the advertised address and any it is also reached at (IPs or DNS names). */
export function certificateNames(
  address: string,
  alsoAt: readonly string[],
): { dnsNames: string[]; ips: string[] } {
  const all = [...new Set(['127.0.0.1', 'localhost', address, ...alsoAt])];
  return { ips: all.filter((a) => isIP(a) !== 0), dnsNames: all.filter((a) => isIP(a) === 0) };
}

const STANDBY_RETRY_MS = 5_000;

/**
 * Listens at `at`; when its fixed port is held — on a node, by the agent of
 * another pool whose DaemonSet also selects it — stands by until the port is
 * free rather than failing: an agent serves every domain of its node's
 * libvirtd and is published under the node's name, so the holder already
 * serves this pool's VMs, and this one takes over when that pool goes.
 */
export async function listenOrStandBy(
  server: Server,
  at: string,
  onStandBy: (message: string) => void,
  retryMs = STANDBY_RETRY_MS,
): Promise<AddressInfo> {
  for (let said = false; ; said = true) {
    try {
      return await listen(server, at, 'the VM host agent');
    } catch (err) {
      if (!/address in use/.test(String(err)) || /:0$/.test(at)) throw err;
      if (!said)
        onStandBy(
          `${at} is held by another process (another pool's VM host agent on this node serves its VMs too); standing by until it is free`,
        );
      await sleep(retryMs);
    }
  }
}
