// The hypervisor's JSON console on loopback (paths in protocol.ts): the VMs,
// the workload control planes, the faults and the settings. A change of faults
// or settings asks the loop for a pass, so a VM named to die dies at once.
import http from 'node:http';
import { listen } from '../../../runtime/listen.ts';
import { objectBody, RouteTable, reply } from '../kit/routes.ts';
import { consolePaths } from './protocol.ts';
import { clusterView, type HypervisorState, vmView } from './state.ts';

export function consoleRoutes(state: HypervisorState, changed: () => void): RouteTable {
  const after = <T>(value: T): T => {
    changed();
    return value;
  };
  return new RouteTable({ statusOf: (err) => (err instanceof RangeError ? 400 : undefined) })
    .add('GET', consolePaths.vms, ({ url }) => {
      const cluster = url.searchParams.get('cluster');
      return reply(
        200,
        state
          .vmList()
          .filter((v) => !cluster || v.cluster === cluster)
          .map(vmView),
      );
    })
    .add('GET', consolePaths.clusters, () => reply(200, state.clusterList().map(clusterView)))
    .add('GET', consolePaths.faults, () => reply(200, state.getFaults()))
    .add('PUT', consolePaths.faults, ({ body }) => reply(200, after(state.setFaults(objectBody(body)))))
    .add('DELETE', consolePaths.faults, () => reply(200, after(state.clearFaults())))
    .add('GET', consolePaths.settings, () => reply(200, state.getSettings()))
    .add('PUT', consolePaths.settings, ({ body }) => reply(200, after(state.setSettings(objectBody(body)))));
}

/** The console's server; `url` once started. */
export class ConsoleServer {
  private readonly server: http.Server;
  private address: string | undefined;

  constructor(state: HypervisorState, changed: () => void) {
    this.server = http.createServer(consoleRoutes(state, changed).listener);
  }

  get url(): string {
    if (!this.address) throw new Error('the hypervisor console has not started');
    return this.address;
  }

  async start(port = 0): Promise<string> {
    const addr = await listen(this.server, `127.0.0.1:${port}`, 'the simulated hypervisor');
    this.address = `http://127.0.0.1:${addr.port}`;
    return this.address;
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    await new Promise<void>((resolve, reject) => {
      this.server.close((err) => (err ? reject(err) : resolve()));
      this.server.closeAllConnections();
    });
  }
}
