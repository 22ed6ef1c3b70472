// Cluster API on a local cluster, in one call: the real core manager (out of
// cluster, on loopback) with its CRDs and webhooks, our simulated
// infrastructure provider's CRDs and machine controller (in this process), and
// stop() that undoes it in the order that leaves nothing stuck: webhook
// configurations pointing at a stopped server would refuse every later write.
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeClient } from '../../../runtime/client.ts';
import type { Logger } from '../../../runtime/log.ts';
import { Manager } from '../../../runtime/manager.ts';
import { CustomResourceDefinitions, type K8sObject } from '../../../runtime/resources.ts';
import { NodewardenClusters, NodewardenMachines, NodewardenMachineTemplates } from './api.ts';
import {
  type CoreManager,
  clusterApiBuild,
  createOrReplace,
  installClusterApiCrds,
  registerClusterApiWebhooks,
  removeClusterApiWebhooks,
  startCoreManager,
  waitForEstablished,
  waitForReady,
} from './core-manager.ts';
import { setupNodewardenMachines } from './machine-controller.ts';

export interface ClusterApiEnvironment {
  manager: CoreManager;
  stop(): Promise<void>;
}

export interface EnvironmentOptions {
  client: KubeClient;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  workDir: string;
  kubernetesVersion: string;
  log: Logger;
}

export async function startClusterApi(o: EnvironmentOptions): Promise<ClusterApiEnvironment> {
  const dir = await clusterApiBuild();
  for (const cr of [NodewardenClusters, NodewardenMachines, NodewardenMachineTemplates])
    await applyCrd(o.client, cr.crd() as unknown as K8sObject);
  const configPrefix = `nodewarden-capi-${randomBytes(3).toString('hex')}`;
  const manager = await startCoreManager({
    dir,
    kubeconfig: o.kubeconfigPath,
    workDir: o.workDir,
    // MachinePools need a provider of their own; nothing here uses them.
    args: ['--feature-gates=MachinePool=false'],
    beforeStart: async (webhook) => {
      await installClusterApiCrds(o.client, dir, webhook);
      await registerClusterApiWebhooks(o.client, dir, { ...webhook, configPrefix });
    },
  });
  try {
    await waitForReady(manager, 120_000);
  } catch (err) {
    await manager.stop();
    await removeClusterApiWebhooks(o.client, configPrefix);
    throw err;
  }
  const infra = new Manager({ kubeConfig: o.kubeConfig, log: o.log });
  setupNodewardenMachines(infra, { kubeletVersion: o.kubernetesVersion });
  const stopInfra = new AbortController();
  const running = infra.start(stopInfra.signal);
  return {
    manager,
    async stop() {
      await manager.stop();
      await removeClusterApiWebhooks(o.client, configPrefix);
      stopInfra.abort();
      await running;
    },
  };
}

async function applyCrd(client: KubeClient, crd: K8sObject): Promise<void> {
  await createOrReplace(client, CustomResourceDefinitions, crd);
  await waitForEstablished(client, crd.metadata?.name ?? '');
}
