// The route table of a simulator's loopback HTTP API: method + path pattern
// (`/groups/:id/instances`) → handler, JSON in and out, every error answered
// as {"error": "..."} with its status. A guard (fault injection, say) runs
// before every call except on routes marked `open` (a simulator's console:
// its settings and faults must stay reachable while its API is failing) and
// calls carrying CONSOLE_HEADER (the console reading the API: the faults
// injected are meant for the operator, and must not be spent on the CLI).
import type http from 'node:http';
import { HttpError, readJsonBody } from '../../../runtime/http.ts';

/** The header a simulator's console sends so its calls pass the guard; the operator's clients never send it. */
export const CONSOLE_HEADER = 'x-nodewarden-console';

export interface RouteRequest {
  method: string;
  url: URL;
  /** The pattern's `:name` segments, URL-decoded. */
  params: Record<string, string>;
  /** The JSON body of POST and PUT ({} when empty); undefined for other methods. */
  body: unknown;
}

export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: RouteRequest) => Reply | Promise<Reply>;

/** Runs before a guarded call; a reply ends the call with it, undefined lets it through. */
export type Guard = (req: RouteRequest) => Reply | undefined | Promise<Reply | undefined>;

export interface RouteTableOptions {
  /** Largest request body accepted. Default 1 MiB. */
  maxBody?: number;
  /** Runs first on every request, matched or not (e.g. advancing a simulated clock). */
  beforeEach?: () => void;
  /** Runs before every call but those to `open` routes and the console's, unknown paths included. */
  guard?: Guard;
  /** The HTTP status of an error a handler throws; HttpError's own status, else 500, when undefined. */
  statusOf?: (err: unknown) => number | undefined;
}

interface Route {
  method: string;
  segments: string[];
  handler: Handler;
  open: boolean;
}

export function reply(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers ? { status, body, headers } : { status, body };
}

export class RouteTable {
  private readonly routes: Route[] = [];
  private readonly opts: RouteTableOptions;

  constructor(opts: RouteTableOptions = {}) {
    this.opts = opts;
  }

  /** Adds a route; `open` routes skip the guard. Earlier routes win when patterns overlap. */
  add(method: string, pattern: string, handler: Handler, opts: { open?: boolean } = {}): this {
    const segments = pattern.split('/').filter(Boolean);
    this.routes.push({ method, segments, handler, open: opts.open ?? false });
    return this;
  }

  /** The node:http request listener. */
  readonly listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.handle(req, res).catch((err: unknown) => {
      const status = this.opts.statusOf?.(err) ?? (err instanceof HttpError ? err.status : 500);
      send(res, { status, body: { error: err instanceof Error ? err.message : String(err) } });
    });
  };

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const body =
      method === 'POST' || method === 'PUT'
        ? ((await readJsonBody(req, this.opts.maxBody ?? 1 << 20)) ?? {})
        : undefined;
    this.opts.beforeEach?.();
    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const found = this.match(method, parts);
    const request: RouteRequest = { method, url, params: found.params ?? {}, body };
    const fromConsole = req.headers[CONSOLE_HEADER] !== undefined;
    if (!found.route?.open && !fromConsole && this.opts.guard) {
      const refused = await this.opts.guard(request);
      if (refused) return send(res, refused);
    }
    if (!found.route) {
      if (found.pathKnown) throw new HttpError(405, `${method} not allowed on ${url.pathname}`);
      throw new HttpError(404, `no route ${method} ${url.pathname}`);
    }
    send(res, await found.route.handler(request));
  }

  private match(
    method: string,
    parts: string[],
  ): { route?: Route; params?: Record<string, string>; pathKnown: boolean } {
    let pathKnown = false;
    for (const route of this.routes) {
      const params = matchPath(route.segments, parts);
      if (!params) continue;
      if (route.method === method) return { route, params, pathKnown: true };
      pathKnown = true;
    }
    return { pathKnown };
  }
}

function matchPath(pattern: string[], parts: string[]): Record<string, string> | undefined {
  if (pattern.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, seg] of pattern.entries()) {
    const part = parts[i]!;
    if (seg.startsWith(':')) params[seg.slice(1)] = part;
    else if (seg !== part) return undefined;
  }
  return params;
}

function send(res: http.ServerResponse, r: Reply): void {
  if (res.headersSent) return;
  const text = JSON.stringify(r.body);
  res.writeHead(r.status, {
    ...r.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The body as a JSON object; 400 otherwise. */
export function objectBody(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(400, 'body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
