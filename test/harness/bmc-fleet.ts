// How a test reaches the run's simulated BMC fleet: found the way the operator
// finds it (kube-system/nodewarden-simulated-bmc), its certificate pinned.
import assert from 'node:assert/strict';
import type { ConsoleTarget } from '../../src/cluster/infra/bmc/api.ts';
import { BMC_SIMULATOR, FLEET_CA_KEY } from '../../src/cluster/infra/bmc/protocol.ts';
import { findEndpoint } from '../../src/cluster/infra/kit/discovery.ts';
import type { KubeClient } from '../../src/runtime/client.ts';

export async function clusterFleet(client: KubeClient): Promise<ConsoleTarget> {
  const published = await findEndpoint(client, BMC_SIMULATOR);
  assert.ok(
    published,
    'the test cluster names no simulated BMC fleet (kube-system/nodewarden-simulated-bmc)',
  );
  const ca = published[FLEET_CA_KEY];
  return ca ? { endpoint: published.endpoint, ca } : { endpoint: published.endpoint };
}
