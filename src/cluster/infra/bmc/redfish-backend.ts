// The fleet's state as the Redfish service's backend: its machines as they
// are, its faults as each machine's quirks. Power-ons that came due are
// advanced before every read, so a client sees what the clock says.
import type {
  BootPatch,
  RedfishBackend,
  RedfishSystem,
  ResetType,
  SystemQuirks,
} from '../../../redfish/backend.ts';
import type { BmcState } from './state.ts';

export function fleetBackend(state: BmcState, clock: () => number): RedfishBackend {
  const fresh = () => state.tick(clock());
  return {
    system: async (id: string): Promise<RedfishSystem | undefined> => {
      fresh();
      return state.get(id);
    },
    systems: async () => {
      fresh();
      return state.records();
    },
    quirks: (id: string): SystemQuirks => ({
      unreachable: state.hasFault('unreachable', id),
      badCredentials: state.hasFault('badCredentials', id),
      vanished: state.hasFault('vanished', id),
      redirectToUuid: state.hasFault('redirectToUuid', id),
      mediaUnderSystem: state.hasFault('mediaUnderSystem', id),
    }),
    reset: async (id: string, type: ResetType) => {
      state.reset(id, type, clock());
    },
    setBoot: async (id: string, patch: BootPatch) => state.setBoot(id, patch),
    insertMedia: async (id: string, image: string) => {
      state.insertMedia(id, image);
    },
    ejectMedia: async (id: string) => {
      state.ejectMedia(id);
    },
  };
}
