// Redfish over the fleet's listener, for every machine at once, as Ironic and
// its BMCs speak it: unauthenticated service root; HTTP basic auth or a
// session token (X-Auth-Token) elsewhere, each good only for the machines
// with those credentials; Redfish error bodies with proper status codes. The
// faults apply here: an unreachable machine's requests get their connection
// dropped, refused logins 401, vanished machines 404, failing power 500.
import type http from 'node:http';
import { HttpError, readJsonBody } from '../../../runtime/http.ts';
import type { MachineCredentials } from './protocol.ts';
import * as doc from './redfish-resources.ts';
import type { Session, SessionStore } from './sessions.ts';
import { type BmcState, BmcStateError, type MachineRecord, RESET_TYPES, type ResetType } from './state.ts';

export interface RedfishOptions {
  state: BmcState;
  sessions: SessionStore;
  clock: () => number;
  /** Names the fleet (its service root's UUID). */
  fleetId: string;
}

/** What a request comes to: a reply, or a dropped connection (an unreachable BMC). */
type Answer = { status: number; body?: unknown; headers?: Record<string, string> };
type Outcome = Answer | 'drop';

interface Principal {
  credentials: MachineCredentials;
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
        if (err instanceof BmcStateError) return fail(err.status, statusMessageId(err.status), err.message);
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
  const { state, clock } = opts;
  const now = clock();
  state.tick(now);
  const method = req.method ?? 'GET';
  const path = new URL(req.url ?? '/', 'https://localhost').pathname.replace(/\/+$/, '') || '/';
  const body =
    method === 'POST' || method === 'PATCH' ? ((await readJsonBody(req, 1 << 20)) ?? {}) : undefined;
  const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (seg[0] !== 'redfish') return notFound(path);
  if (seg.length === 1) return only(method, ['GET'], () => json({ v1: `${doc.ROOT}/` }));
  if (seg[1] !== 'v1') return notFound(path);
  const rest = seg.slice(2);
  if (rest.length === 0) return only(method, ['GET'], () => json(doc.serviceRoot(opts.fleetId)));
  if (rest[0] === 'SessionService' && rest[1] === 'Sessions' && rest.length === 2 && method === 'POST') {
    return login(opts, body, now);
  }

  const who = principal(opts, req, now);
  const [top, id, ...sub] = rest;
  if (id === undefined) return fleetWide(opts, who, method, top ?? '', path);
  if (top === 'SessionService') return sessionRoutes(opts, who, method, rest, path);
  if (top !== 'Systems' && top !== 'Managers' && top !== 'Chassis') return notFound(path);

  const machine = state.get(id);
  if (machine && state.hasFault('unreachable', id)) return 'drop';
  if (!who) return unauthorized();
  if (!machine || state.hasFault('vanished', id)) return notFound(path);
  if (state.hasFault('badCredentials', id) || !sameCredentials(who.credentials, machine.spec.credentials)) {
    return unauthorized();
  }
  if (top === 'Systems') return systemRoutes(opts, machine, method, sub, body, path, now);
  if (top === 'Managers') return managerRoutes(opts, machine, method, sub, body, path);
  return sub.length === 0 ? only(method, ['GET'], () => json(doc.chassis(machine))) : notFound(path);
}

function only(method: string, allowed: string[], run: () => Outcome): Outcome {
  if (allowed.includes(method)) return run();
  return {
    ...fail(405, 'OperationNotAllowed', `${method} is not allowed here`),
    headers: { allow: allowed.join(', ') },
  };
}

function sameCredentials(a: MachineCredentials, b: MachineCredentials): boolean {
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
function admitted(
  opts: RedfishOptions,
  c: MachineCredentials | undefined,
): MachineRecord[] | 'drop' | undefined {
  if (!c) return undefined;
  const named = opts.state.machinesFor(c);
  const reachable = named.filter((m) => !opts.state.hasFault('unreachable', m.spec.id));
  if (named.length > 0 && reachable.length === 0) return 'drop';
  const accepted = reachable.filter((m) => !opts.state.hasFault('badCredentials', m.spec.id));
  return accepted.length > 0 ? accepted : undefined;
}

function login(opts: RedfishOptions, body: unknown, now: number): Outcome {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof b.UserName !== 'string' || typeof b.Password !== 'string') {
    return fail(400, 'PropertyMissing', 'a session needs UserName and Password');
  }
  const credentials = { username: b.UserName, password: b.Password };
  const machines = admitted(opts, credentials);
  if (machines === 'drop') return 'drop';
  if (!machines) return unauthorized();
  const s = opts.sessions.create(credentials, now);
  return {
    status: 201,
    body: doc.session(s),
    headers: { 'x-auth-token': s.token, location: doc.paths.session(s.id) },
  };
}

function fleetWide(
  opts: RedfishOptions,
  who: Principal | undefined,
  method: string,
  top: string,
  path: string,
): Outcome {
  const machines = admitted(opts, who?.credentials);
  if (machines === 'drop') return 'drop';
  if (!machines || !who) return unauthorized();
  const visible = machines.filter((m) => !opts.state.hasFault('vanished', m.spec.id)).map((m) => m.spec.id);
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

function sessionRoutes(
  opts: RedfishOptions,
  who: Principal | undefined,
  method: string,
  rest: string[],
  path: string,
): Outcome {
  const machines = admitted(opts, who?.credentials);
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

function systemRoutes(
  opts: RedfishOptions,
  m: MachineRecord,
  method: string,
  sub: string[],
  body: unknown,
  path: string,
  now: number,
): Outcome {
  const { state } = opts;
  const id = m.spec.id;
  const [what, member, extra] = sub;
  if (what === undefined) {
    return only(method, ['GET', 'PATCH'], () =>
      method === 'GET' ? json(doc.system(m)) : patchSystem(opts, m, body),
    );
  }
  if (what === 'Actions' && member === 'ComputerSystem.Reset' && extra === undefined) {
    return only(method, ['POST'], () => {
      const type = (body as Record<string, unknown>).ResetType;
      if (type === undefined)
        return fail(400, 'ActionParameterMissing', 'ComputerSystem.Reset needs ResetType');
      if (!RESET_TYPES.includes(type as ResetType)) {
        return fail(
          400,
          'ActionParameterNotSupported',
          `ResetType ${JSON.stringify(type)} is not one of ${RESET_TYPES.join(', ')}`,
        );
      }
      state.reset(id, type as ResetType, now);
      return noContent;
    });
  }
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

/** PATCH of a System: only Boot is writable. */
function patchSystem(opts: RedfishOptions, m: MachineRecord, body: unknown): Outcome {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const other = Object.keys(b).filter((k) => k !== 'Boot' && !k.startsWith('@'));
  if (other.length)
    return fail(400, 'PropertyNotWritable', `only Boot can be changed, not ${other.join(', ')}`);
  const boot = (typeof b.Boot === 'object' && b.Boot !== null ? b.Boot : {}) as Record<string, unknown>;
  const updated = opts.state.setBoot(m.spec.id, {
    target: boot.BootSourceOverrideTarget,
    enabled: boot.BootSourceOverrideEnabled,
    mode: boot.BootSourceOverrideMode,
  });
  return json(doc.system(updated));
}

function managerRoutes(
  opts: RedfishOptions,
  m: MachineRecord,
  method: string,
  sub: string[],
  body: unknown,
  path: string,
): Outcome {
  const id = m.spec.id;
  const at = sub.join('/');
  switch (at) {
    case '':
      return only(method, ['GET'], () => json(doc.manager(m)));
    case 'VirtualMedia':
      return only(method, ['GET'], () => json(doc.virtualMediaCollection(m)));
    case 'VirtualMedia/Cd':
      return only(method, ['GET'], () => json(doc.virtualCd(m)));
    case 'VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia':
      return only(method, ['POST'], () => {
        const image = (body as Record<string, unknown>).Image;
        if (typeof image !== 'string' || !image)
          return fail(400, 'ActionParameterMissing', 'InsertMedia needs Image (a URL)');
        opts.state.insertMedia(id, image);
        return noContent;
      });
    case 'VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia':
      return only(method, ['POST'], () => {
        opts.state.ejectMedia(id);
        return noContent;
      });
    default:
      return notFound(path);
  }
}
