// Redfish for every machine a backend holds, on one listener, as Ironic and
// its BMCs speak it: unauthenticated service root; HTTP basic auth or a
// session token (X-Auth-Token) elsewhere, each good only for the machines
// with those credentials; Redfish error bodies with proper status codes.
// Served by the simulated BMC fleet and by the VM host agent, each with its
// backend (backend.ts). A backend's quirks apply here: an unreachable
// machine's requests get their connection dropped, refused logins 401,
// vanished machines 404.
import type http from 'node:http';
import { HttpError, readJsonBody } from '../runtime/http.ts';
import {
  RESET_TYPES,
  type RedfishBackend,
  RedfishBackendError,
  type RedfishSystem,
  type ResetType,
  type SystemCredentials,
  type SystemQuirks,
} from './backend.ts';
import * as doc from './documents.ts';
import type { Session, SessionStore } from './sessions.ts';

export interface RedfishOptions {
  backend: RedfishBackend;
  sessions: SessionStore;
  clock: () => number;
  /** The service root's identity. */
  identity: doc.ServiceIdentity;
}

/** What a request comes to: a reply, or a dropped connection (an unreachable BMC). */
type Answer = { status: number; body?: unknown; headers?: Record<string, string> };
type Outcome = Answer | 'drop';
/** What a route comes to: at once, or once the backend has acted. */
type Reply = Outcome | Promise<Outcome>;

interface Principal {
  credentials: SystemCredentials;
  session?: Session;
}

const json = (body: unknown, status = 200): Outcome => ({ status, body });
const noContent: Outcome = { status: 204 };
const fail = (status: number, id: string, message: string): Answer => ({
  status,
  body: doc.redfishError(id, message),
  ...(status === 401 ? { headers: { 'www-authenticate': 'Basic realm="nodewarden BMC"' } } : {}),
});
const unauthorized = () => fail(401, 'AccessDenied', 'the credentials are not accepted by this BMC');
const notFound = (path: string) => fail(404, 'ResourceNotFound', `no resource at ${path}`);

export function redfishHandler(
  opts: RedfishOptions,
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    handle(opts, req)
      .catch((err: unknown): Outcome => {
        if (err instanceof HttpError) return fail(err.status, 'MalformedJSON', err.message);
        if (err instanceof RedfishBackendError)
          return fail(err.status, statusMessageId(err.status), err.message);
        return fail(500, 'InternalError', err instanceof Error ? err.message : String(err));
      })
      .then((o) => send(req, res, o));
  };
}

function statusMessageId(status: number): string {
  return status === 404 ? 'ResourceNotFound' : status === 400 ? 'PropertyValueNotInList' : 'GeneralError';
}

function send(req: http.IncomingMessage, res: http.ServerResponse, o: Outcome): void {
  if (o === 'drop') {
    req.socket.destroy();
    return;
  }
  const headers: Record<string, string> = {
    'odata-version': '4.0',
    'cache-control': 'no-cache',
    ...o.headers,
  };
  if (o.body === undefined) {
    res.writeHead(o.status, headers).end();
    return;
  }
  const text = JSON.stringify(o.body);
  res
    .writeHead(o.status, {
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
    })
    .end(text);
}

async function handle(opts: RedfishOptions, req: http.IncomingMessage): Promise<Outcome> {
  const { backend, clock } = opts;
  const now = clock();
  const method = req.method ?? 'GET';
  const path = new URL(req.url ?? '/', 'https://localhost').pathname.replace(/\/+$/, '') || '/';
  const body =
    method === 'POST' || method === 'PATCH' ? ((await readJsonBody(req, 1 << 20)) ?? {}) : undefined;
  const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (seg[0] !== 'redfish') return notFound(path);
  if (seg.length === 1) return only(method, ['GET'], () => json({ v1: `${doc.ROOT}/` }));
  if (seg[1] !== 'v1') return notFound(path);
  const rest = seg.slice(2);
  if (rest.length === 0) return only(method, ['GET'], () => json(doc.serviceRoot(opts.identity)));
  if (rest[0] === 'SessionService' && rest[1] === 'Sessions' && rest.length === 2 && method === 'POST') {
    return login(opts, body, now);
  }

  const who = principal(opts, req, now);
  const [top, id, ...sub] = rest;
  if (id === undefined) return fleetWide(opts, who, method, top ?? '', path);
  if (top === 'SessionService') return sessionRoutes(opts, who, method, rest, path);
  if (top !== 'Systems' && top !== 'Managers' && top !== 'Chassis') return notFound(path);

  const machine =
    (await backend.system(id)) ?? (top === 'Systems' ? await bySystemUuid(backend, id) : undefined);
  if (!machine) return who ? notFound(path) : unauthorized();
  const mid = machine.spec.id;
  const quirks = quirksOf(opts, mid);
  if (quirks.unreachable) return 'drop';
  if (!who) return unauthorized();
  if (quirks.vanished) return notFound(path);
  if (quirks.badCredentials || !sameCredentials(who.credentials, machine.spec.credentials)) {
    return unauthorized();
  }
  if (top === 'Systems' && id === mid && quirks.redirectToUuid) {
    // sushy-tools answers a System addressed by name with 307 to its UUID path.
    const to = [doc.paths.system(doc.systemUuid(mid)), ...sub.map(encodeURIComponent)].join('/');
    return { status: 307, headers: { location: to } };
  }
  const home: doc.MediaHome = quirks.mediaUnderSystem ? 'system' : 'manager';
  const at: Route = { opts, m: machine, method, body, path, home };
  if (top === 'Systems') return systemRoutes(at, sub);
  if (top === 'Managers') return managerRoutes(at, sub);
  return sub.length === 0 ? only(method, ['GET'], () => json(doc.chassis(machine))) : notFound(path);
}

/** The machine whose System UUID is `uuid` (a sushy-style BMC serves it there). */
async function bySystemUuid(backend: RedfishBackend, uuid: string): Promise<RedfishSystem | undefined> {
  if (!/^[0-9a-f-]{36}$/.test(uuid)) return undefined;
  return (await backend.systems()).find((m) => doc.systemUuid(m.spec.id) === uuid);
}

const quirksOf = (opts: RedfishOptions, id: string): SystemQuirks => opts.backend.quirks?.(id) ?? {};

/** One request to one machine's resources. */
interface Route {
  opts: RedfishOptions;
  m: RedfishSystem;
  method: string;
  body: unknown;
  path: string;
  /** Where this machine keeps its virtual media. */
  home: doc.MediaHome;
}

function only(method: string, allowed: string[], run: () => Reply): Reply {
  if (allowed.includes(method)) return run();
  return {
    ...fail(405, 'OperationNotAllowed', `${method} is not allowed here`),
    headers: { allow: allowed.join(', ') },
  };
}

function sameCredentials(a: SystemCredentials, b: SystemCredentials): boolean {
  return a.username === b.username && a.password === b.password;
}

/** Who is asking: a live session's token, else basic auth; undefined if neither. */
function principal(opts: RedfishOptions, req: http.IncomingMessage, now: number): Principal | undefined {
  const token = req.headers['x-auth-token'];
  if (typeof token === 'string' && token) {
    const session = opts.sessions.use(token, now);
    return session && { credentials: session.credentials, session };
  }
  const auth = req.headers.authorization;
  if (auth?.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0)
      return { credentials: { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) } };
  }
  return undefined;
}

/**
 * The machines a fleet-wide request may see with these credentials: 'drop'
 * when every machine they name is unreachable, undefined when none takes them.
 */
async function admitted(
  opts: RedfishOptions,
  c: SystemCredentials | undefined,
): Promise<RedfishSystem[] | 'drop' | undefined> {
  if (!c) return undefined;
  const named = (await opts.backend.systems()).filter((m) => sameCredentials(m.spec.credentials, c));
  const reachable = named.filter((m) => !quirksOf(opts, m.spec.id).unreachable);
  if (named.length > 0 && reachable.length === 0) return 'drop';
  const accepted = reachable.filter((m) => !quirksOf(opts, m.spec.id).badCredentials);
  return accepted.length > 0 ? accepted : undefined;
}

async function login(opts: RedfishOptions, body: unknown, now: number): Promise<Outcome> {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof b.UserName !== 'string' || typeof b.Password !== 'string') {
    return fail(400, 'PropertyMissing', 'a session needs UserName and Password');
  }
  const credentials = { username: b.UserName, password: b.Password };
  const machines = await admitted(opts, credentials);
  if (machines === 'drop') return 'drop';
  if (!machines) return unauthorized();
  const s = opts.sessions.create(credentials, now);
  return {
    status: 201,
    body: doc.session(s),
    headers: { 'x-auth-token': s.token, location: doc.paths.session(s.id) },
  };
}

async function fleetWide(
  opts: RedfishOptions,
  who: Principal | undefined,
  method: string,
  top: string,
  path: string,
): Promise<Outcome> {
  const machines = await admitted(opts, who?.credentials);
  if (machines === 'drop') return 'drop';
  if (!machines || !who) return unauthorized();
  const visible = machines.filter((m) => !quirksOf(opts, m.spec.id).vanished).map((m) => m.spec.id);
  switch (top) {
    case 'Systems':
      return only(method, ['GET'], () =>
        json(
          doc.collection(
            'ComputerSystemCollection',
            doc.paths.systems,
            'Computer Systems',
            visible.map(doc.paths.system),
          ),
        ),
      );
    case 'Managers':
      return only(method, ['GET'], () =>
        json(
          doc.collection('ManagerCollection', doc.paths.managers, 'Managers', visible.map(doc.paths.manager)),
        ),
      );
    case 'Chassis':
      return only(method, ['GET'], () =>
        json(
          doc.collection(
            'ChassisCollection',
            doc.paths.chassisList,
            'Chassis',
            visible.map(doc.paths.chassis),
          ),
        ),
      );
    case 'SessionService':
      return only(method, ['GET'], () => json(doc.sessionService()));
    default:
      return notFound(path);
  }
}

async function sessionRoutes(
  opts: RedfishOptions,
  who: Principal | undefined,
  method: string,
  rest: string[],
  path: string,
): Promise<Outcome> {
  const machines = await admitted(opts, who?.credentials);
  if (machines === 'drop') return 'drop';
  if (!machines || !who) return unauthorized();
  const now = opts.clock();
  if (rest.length === 2 && rest[1] === 'Sessions') {
    const mine = opts.sessions.listFor(who.credentials, now).map((s) => doc.paths.session(s.id));
    return only(method, ['GET', 'POST'], () =>
      json(doc.collection('SessionCollection', doc.paths.sessions, 'Sessions', mine)),
    );
  }
  if (rest.length !== 3 || rest[1] !== 'Sessions') return notFound(path);
  const s = opts.sessions.find(rest[2] ?? '');
  if (!s || !sameCredentials(s.credentials, who.credentials)) return notFound(path);
  return only(method, ['GET', 'DELETE'], () => {
    if (method === 'GET') return json(doc.session(s));
    opts.sessions.delete(s.id);
    return noContent;
  });
}

function systemRoutes(r: Route, sub: string[]): Reply {
  const { opts, m, method, body, path } = r;
  const [what, member, extra] = sub;
  if (what === undefined) {
    return only(method, ['GET', 'PATCH'], () =>
      method === 'GET' ? json(doc.system(m, r.home)) : patchSystem(r),
    );
  }
  if (what === 'Actions' && member === 'ComputerSystem.Reset' && extra === undefined) {
    return only(method, ['POST'], () => resetSystem(opts, m, body));
  }
  if (what === 'VirtualMedia' && r.home === 'system') return mediaRoutes(r, sub.slice(1));
  if (what === 'Storage') return storageRoutes(r, sub.slice(1));
  if (extra !== undefined) return notFound(path);
  if (what === 'EthernetInterfaces') {
    const d = member === undefined ? doc.ethernetInterfaces(m) : doc.ethernetInterface(m, member);
    return d ? only(method, ['GET'], () => json(d)) : notFound(path);
  }
  if (what === 'Processors') {
    const d = member === undefined ? doc.processors(m) : doc.processor(m, member);
    return d ? only(method, ['GET'], () => json(d)) : notFound(path);
  }
  return notFound(path);
}

async function resetSystem(opts: RedfishOptions, m: RedfishSystem, body: unknown): Promise<Outcome> {
  const type = (body as Record<string, unknown>).ResetType;
  if (type === undefined) return fail(400, 'ActionParameterMissing', 'ComputerSystem.Reset needs ResetType');
  if (!RESET_TYPES.includes(type as ResetType)) {
    return fail(
      400,
      'ActionParameterNotSupported',
      `ResetType ${JSON.stringify(type)} is not one of ${RESET_TYPES.join(', ')}`,
    );
  }
  await opts.backend.reset(m.spec.id, type as ResetType);
  return noContent;
}

/** Storage/1/Drives/Disk0: one controller, one disk. */
function storageRoutes(r: Route, sub: string[]): Reply {
  const docs: Record<string, () => unknown> = {
    '': () => doc.storageCollection(r.m),
    '1': () => doc.storage(r.m),
    '1/Drives/Disk0': () => doc.drive(r.m),
  };
  const d = docs[sub.join('/')];
  return d ? only(r.method, ['GET'], () => json(d())) : notFound(r.path);
}

/** PATCH of a System: only Boot is writable. */
async function patchSystem({ opts, m, body, home }: Route): Promise<Outcome> {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const other = Object.keys(b).filter((k) => k !== 'Boot' && !k.startsWith('@'));
  if (other.length)
    return fail(400, 'PropertyNotWritable', `only Boot can be changed, not ${other.join(', ')}`);
  const boot = (typeof b.Boot === 'object' && b.Boot !== null ? b.Boot : {}) as Record<string, unknown>;
  const updated = await opts.backend.setBoot(m.spec.id, {
    target: boot.BootSourceOverrideTarget,
    enabled: boot.BootSourceOverrideEnabled,
    mode: boot.BootSourceOverrideMode,
  });
  return json(doc.system(updated, home));
}

function managerRoutes(r: Route, sub: string[]): Reply {
  if (sub.length === 0) return only(r.method, ['GET'], () => json(doc.manager(r.m, r.home)));
  if (sub[0] === 'VirtualMedia' && r.home === 'manager') return mediaRoutes(r, sub.slice(1));
  return notFound(r.path);
}

/** The virtual CD, wherever the machine keeps it (`sub` is the path below VirtualMedia). */
function mediaRoutes(r: Route, sub: string[]): Reply {
  const { opts, m, method, body } = r;
  switch (sub.join('/')) {
    case '':
      return only(method, ['GET'], () => json(doc.virtualMediaCollection(m, r.home)));
    case 'Cd':
      return only(method, ['GET'], () => json(doc.virtualCd(m, r.home)));
    case 'Cd/Actions/VirtualMedia.InsertMedia':
      return only(method, ['POST'], async () => {
        const image = (body as Record<string, unknown>).Image;
        if (typeof image !== 'string' || !image)
          return fail(400, 'ActionParameterMissing', 'InsertMedia needs Image (a URL)');
        await opts.backend.insertMedia(m.spec.id, image);
        return noContent;
      });
    case 'Cd/Actions/VirtualMedia.EjectMedia':
      return only(method, ['POST'], async () => {
        await opts.backend.ejectMedia(m.spec.id);
        return noContent;
      });
    default:
      return notFound(r.path);
  }
}
