// The simulated cloud as an add-on of a local cluster: `cluster up` starts its
// process (detached; the CLI exits) once the fleet is Ready and publishes its
// endpoint; `cluster down` and `delete` stop it. Its state persists in the
// add-on's folder between runs (see process-main.ts). The capability that
// needs it (rolling upgrades) lists this value; nothing registers it.

import { KubeClient } from '../../../runtime/client.ts';
import { KubeConfig } from '../../../runtime/kubeconfig.ts';
import type { InfraContext, SimulatedInfrastructure } from '../index.ts';
import { previousPort, runningEndpoint, startDaemon, stopDaemon } from '../kit/daemon.ts';
import { nodeScript } from '../kit/process.ts';
import { cloudRequest } from './api.ts';
import { cloudCommand, parseBootDelay } from './cli.ts';
import { publishSimulatedCloud } from './discovery.ts';
import { type CloudConfig, cloudDaemon as daemon, runningCloudEndpoint } from './process-main.ts';

export const simulatedCloud: SimulatedInfrastructure = {
  name: 'cloud',

  upFlags: {
    'boot-delay': {
      placeholder: 'D',
      help: [
        'how long a machine the simulated cloud launches takes to boot,',
        'e.g. 5s, 500ms (default 5s; kept across down/up; see nodewarden cloud)',
      ],
    },
  },

  command: {
    name: 'cloud',
    summary: "a local cluster's simulated cloud: groups, instances, faults, settings",
    run: cloudCommand,
  },

  async up(ctx: InfraContext): Promise<void> {
    const delay = ctx.flags?.['boot-delay'];
    const bootDelayMs = delay === undefined ? undefined : parseBootDelay(delay);
    const d = daemon(ctx.dir);
    let endpoint = runningEndpoint(d);
    if (endpoint) {
      if (bootDelayMs !== undefined) await cloudRequest(endpoint, 'POST', '/settings', { bootDelayMs });
    } else {
      const port = previousPort(d);
      const config: CloudConfig = {
        cluster: ctx.cluster,
        kubeconfig: ctx.kubeconfig,
        pools: ctx.pools,
        kubernetesVersion: ctx.kubernetesVersion,
        ...(bootDelayMs !== undefined ? { bootDelayMs } : {}),
        ...(port ? { preferredPort: port } : {}),
      };
      endpoint = await startDaemon(d, { entry: nodeScript(import.meta.url, './entry'), config });
    }
    await cloudRequest(endpoint, 'GET', '/settings'); // it answers, not just listens
    const kc = new KubeConfig();
    kc.loadFromFile(ctx.kubeconfig);
    const client = KubeClient.fromKubeConfig(kc, { userAgent: 'nodewarden-cluster' });
    try {
      await publishSimulatedCloud(client, { endpoint, cluster: ctx.cluster });
    } finally {
      client.close();
    }
    ctx.progress?.(`simulated cloud at ${endpoint}`);
  },

  async down(ctx: InfraContext): Promise<void> {
    await stopDaemon(daemon(ctx.dir));
  },

  async endpoint(ctx: InfraContext): Promise<string | undefined> {
    return runningCloudEndpoint(ctx.dir);
  },
};
