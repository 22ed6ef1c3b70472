// The fleet's JSON console under CONSOLE_PREFIX (no auth, loopback): define
// and remove machines (what a hypervisor agent does through libvirt), switch
// one at its BMC behind the operator's back, read and set faults. Redfish
// faults never apply here.

import { RedfishBackendError } from '../../../redfish/backend.ts';
import { HttpError } from '../../../runtime/http.ts';
import { objectBody, RouteTable, reply } from '../kit/routes.ts';
import { CONSOLE_PREFIX, consolePaths } from './protocol.ts';
import { type BmcState, machineView } from './state.ts';

export interface ConsoleOptions {
  state: BmcState;
  clock: () => number;
  /** The fleet's host:port, for the machines' BMC addresses. */
  address: () => string;
}

// Patterns, not consolePaths.machine(':id'): that one URL-encodes the colon.
const MACHINE = `${CONSOLE_PREFIX}/machines/:id`;

export function consoleRoutes({ state, clock, address }: ConsoleOptions): RouteTable {
  const view = (id: string) => {
    const m = state.get(id);
    if (!m) throw new HttpError(404, `no machine "${id}"`);
    return machineView(m, address());
  };
  return new RouteTable({
    beforeEach: () => state.tick(clock()),
    statusOf: (err) =>
      err instanceof RedfishBackendError ? err.status : err instanceof RangeError ? 400 : undefined,
  })
    .add('GET', consolePaths.machines, ({ url }) => {
      const kind = url.searchParams.get('kind');
      const all = state.records().filter((m) => !kind || m.spec.kind === kind);
      return reply(
        200,
        all.map((m) => machineView(m, address())),
      );
    })
    .add('POST', consolePaths.machines, ({ body }) => {
      const { created, record } = state.define(body);
      return reply(created ? 201 : 200, machineView(record, address()));
    })
    .add('GET', MACHINE, ({ params }) => reply(200, view(params.id ?? '')))
    .add('DELETE', MACHINE, ({ params }) => {
      const id = params.id ?? '';
      const gone = view(id);
      state.remove(id);
      return reply(200, gone);
    })
    .add('POST', `${MACHINE}/power`, ({ params, body }) => {
      const power = objectBody(body).power;
      if (power !== 'On' && power !== 'Off')
        throw new HttpError(400, 'body must be {"power": "On"} or {"power": "Off"}');
      state.setPower(params.id ?? '', power, clock());
      return reply(200, view(params.id ?? ''));
    })
    .add('GET', consolePaths.faults, () => reply(200, state.getFaults()))
    .add('PUT', consolePaths.faults, ({ body }) => reply(200, state.setFaults(objectBody(body))))
    .add('DELETE', consolePaths.faults, () => reply(200, state.clearFaults()));
}
