// The fleet's one HTTPS listener on loopback: Redfish for every machine under
// /redfish, the JSON console under CONSOLE_PREFIX. Power-ons that come due are
// advanced on every request and by a timer, so the state's snapshot follows
// even when nobody asks.
import https from 'node:https';
import { redfishHandler } from '../../../redfish/service.ts';
import { SessionStore } from '../../../redfish/sessions.ts';
import { listen } from '../../../runtime/listen.ts';
import { consoleRoutes } from './console-api.ts';
import { CONSOLE_PREFIX } from './protocol.ts';
import { fleetBackend } from './redfish-backend.ts';
import { BmcState } from './state.ts';
import type { FleetCertificate } from './tls.ts';

export interface BmcServerOptions {
  certificate: FleetCertificate;
  state?: BmcState;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  clock?: () => number;
  /** How often power-ons are advanced besides on every request. Default 100 ms; 0 disables the timer. */
  tickMs?: number;
  /** Names the fleet in Redfish (the service root's UUID). */
  fleetId?: string;
  sessionTimeoutMs?: number;
}

export class BmcServer {
  readonly state: BmcState;
  readonly sessions: SessionStore;
  private readonly clock: () => number;
  private readonly tickMs: number;
  private readonly port: number;
  private readonly server: https.Server;
  private timer: NodeJS.Timeout | undefined;
  private boundPort: number | undefined;

  constructor(opts: BmcServerOptions) {
    this.state = opts.state ?? new BmcState();
    this.sessions = new SessionStore(opts.sessionTimeoutMs ? { timeoutMs: opts.sessionTimeoutMs } : {});
    this.clock = opts.clock ?? Date.now;
    this.tickMs = opts.tickMs ?? 100;
    this.port = opts.port ?? 0;
    const console = consoleRoutes({ state: this.state, clock: this.clock, address: () => this.address });
    const redfish = redfishHandler({
      backend: fleetBackend(this.state, this.clock),
      sessions: this.sessions,
      clock: this.clock,
      identity: {
        id: opts.fleetId ?? 'nodewarden',
        name: 'nodewarden simulated BMC',
        product: 'nodewarden simulated BMC fleet',
      },
    });
    this.server = https.createServer(
      { cert: opts.certificate.cert, key: opts.certificate.key },
      (req, res) => {
        const path = req.url ?? '/';
        if (path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`)) console.listener(req, res);
        else redfish(req, res);
      },
    );
  }

  /** 127.0.0.1:PORT, once started. */
  get address(): string {
    if (this.boundPort === undefined) throw new Error('BMC fleet not started');
    return `127.0.0.1:${this.boundPort}`;
  }

  /** The base URL, e.g. https://127.0.0.1:41234. */
  get url(): string {
    return `https://${this.address}`;
  }

  async start(): Promise<string> {
    const addr = await listen(this.server, `127.0.0.1:${this.port}`, 'the simulated BMC fleet');
    this.boundPort = addr.port;
    if (this.tickMs > 0) {
      this.timer = setInterval(() => this.state.tick(this.clock()), this.tickMs);
      this.timer.unref();
    }
    return this.url;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.server.listening) return;
    await new Promise<void>((resolve, reject) => {
      this.server.close((err) => (err ? reject(err) : resolve()));
      this.server.closeAllConnections();
    });
  }
}
