// The HTTP(S) under the Redfish client: one JSON request, following redirects
// as Ironic does and sorting every failure into a BmcError kind the
// controller can switch on. HTTP basic auth on every request: stateless, so a
// controller restart or a BMC reboot never leaves a dead session behind. One
// keep-alive agent per transport and verification setting serves every BMC,
// so 500 hosts cost a few sockets each.
import http from 'node:http';
import https from 'node:https';

export type BmcErrorKind =
  | 'unreachable'
  /** The BMC answered, but its TLS certificate was refused (BmcError.tlsCode says why). */
  | 'certificate'
  | 'credentials'
  | 'not-found'
  /** A redirect not followed: to another host, a downgrade to http, or too many hops. */
  | 'redirect'
  | 'action-failed'
  | 'protocol';

export class BmcError extends Error {
  readonly kind: BmcErrorKind;
  readonly status: number | undefined;
  /** Node's TLS error code, for kind 'certificate' (e.g. DEPTH_ZERO_SELF_SIGNED_CERT). */
  readonly tlsCode: string | undefined;

  constructor(kind: BmcErrorKind, message: string, status?: number, tlsCode?: string) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.tlsCode = tlsCode;
  }
}

export interface RedfishCredentials {
  username: string;
  password: string;
}

export type Json = Record<string, unknown>;

export interface Reply {
  status: number;
  json: Json;
  /** Where the answer came from, when a redirect sent the request elsewhere. */
  redirectedTo?: string;
}

/** How long a request may go without an answer, unless the call says otherwise. */
const TIMEOUT_MS = 10_000;
/** Redirects followed per request, as browsers and sushy's client cap them. */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 307, 308]);

/** The error codes Node gives a TLS handshake whose certificate it refused. */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

const agents = new Map<string, http.Agent>();

function agentFor(url: URL, insecure: boolean): http.Agent {
  const tls = url.protocol === 'https:';
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

/**
 * Whether credentials may follow a redirect from `from` to `to`: the same
 * host and port, or the same host upgraded from http to https. Never to
 * another host, never down to http.
 */
export function sameHost(from: URL, to: URL): boolean {
  if (from.hostname !== to.hostname) return false;
  if (from.protocol === to.protocol) return from.port === to.port;
  return from.protocol === 'http:' && to.protocol === 'https:';
}

interface Raw {
  status: number;
  location: string | undefined;
  text: string;
}

export interface Transport {
  origin: string;
  credentials: RedfishCredentials;
  insecure: boolean;
  /** No answer within this long is a failure; default 10 s. */
  timeoutMs?: number;
}

/** One request, redirects followed; 2xx answers parsed, the rest thrown as BmcError. */
export async function requestJson(
  t: Transport,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  let url = new URL(path, t.origin);
  let redirectedTo: string | undefined;
  for (let hops = 0; ; hops++) {
    const raw = await send(t, method, url, payload);
    if (!REDIRECT_STATUSES.has(raw.status)) return answer(t, method, path, raw, redirectedTo);
    url = nextHop(t, method, path, url, raw, hops);
    redirectedTo = url.href;
  }
}

/** Where a redirect sends the request, or why it is not followed. */
function nextHop(t: Transport, method: string, path: string, url: URL, raw: Raw, hops: number): URL {
  const asked = `BMC at ${t.origin} answered ${method} ${path} with HTTP ${raw.status}`;
  if (!raw.location) throw new BmcError('protocol', `${asked} but no Location`, raw.status);
  const next = new URL(raw.location, url);
  if (hops >= MAX_REDIRECTS)
    throw new BmcError('redirect', `${asked}: more than ${MAX_REDIRECTS} redirects (last to ${next.href})`);
  if (!sameHost(url, next)) {
    throw new BmcError(
      'redirect',
      `${asked} to ${next.href}, another host or a downgrade to http: the credentials are not sent there; point spec.bmc.address at it`,
      raw.status,
    );
  }
  return next;
}

function answer(t: Transport, method: string, path: string, raw: Raw, redirectedTo?: string): Reply {
  const via = redirectedTo ? ` (redirected to ${redirectedTo})` : '';
  if (raw.status >= 200 && raw.status < 300) {
    try {
      return {
        status: raw.status,
        json: raw.text ? (JSON.parse(raw.text) as Json) : {},
        ...(redirectedTo ? { redirectedTo } : {}),
      };
    } catch {
      throw new BmcError(
        'protocol',
        `BMC at ${t.origin} answered ${method} ${path}${via} with no JSON`,
        raw.status,
      );
    }
  }
  throw httpError(t.origin, method, `${path}${via}`, raw.status, redfishMessage(raw.text));
}

function httpError(origin: string, method: string, path: string, status: number, detail?: string): BmcError {
  const said = detail ? `: ${detail}` : '';
  if (status === 401 || status === 403) {
    return new BmcError(
      'credentials',
      `BMC at ${origin} refused the credentials (HTTP ${status})${said}`,
      status,
    );
  }
  if (status === 404) return new BmcError('not-found', `BMC has no ${path} (HTTP 404)${said}`, status);
  const kind = method === 'GET' ? 'protocol' : 'action-failed';
  return new BmcError(kind, `BMC ${method} ${path} failed with HTTP ${status}${said}`, status);
}

function send(t: Transport, method: string, url: URL, payload: Buffer | undefined): Promise<Raw> {
  const { username, password } = t.credentials;
  const headers: Record<string, string> = {
    accept: 'application/json',
    authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
    ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
  };
  const lib = url.protocol === 'https:' ? https : http;
  const at = url.origin;
  const timeout = t.timeoutMs ?? TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method, headers, agent: agentFor(url, t.insecure), timeout }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => reject(new BmcError('unreachable', `BMC at ${at}: ${err.message}`)));
      res.on('end', () => {
        const location = res.headers.location;
        resolve({ status: res.statusCode ?? 0, location, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout / 1000} s`)));
    req.on('error', (err: NodeJS.ErrnoException) => reject(connectionError(at, err)));
    req.end(payload);
  });
}

/** A refused certificate is its own failure: the BMC answered, and the fix is trust, not the network. */
function connectionError(at: string, err: NodeJS.ErrnoException): BmcError {
  if (err.code && CERTIFICATE_CODES.has(err.code)) {
    return new BmcError(
      'certificate',
      `BMC at ${at} answered, but its TLS certificate was refused: ${err.code} (${err.message}); trust its CA or set disableCertificateVerification`,
      undefined,
      err.code,
    );
  }
  return new BmcError('unreachable', `BMC at ${at} is unreachable: ${err.code ?? err.message}`);
}
