// Which local cluster a simulator's console (nodewarden cloud, nodewarden bmc)
// talks to: --cluster NAME, else $NODEWARDEN_CLUSTER, else the local cluster
// the kubeconfig's current context (or --context) points at — the way every
// other command finds its cluster.
import { KubeConfig } from '../runtime/kubeconfig.ts';
import { UsageError } from './command.ts';
import { localClusterAt } from './local-state.ts';

export interface ClusterFlags {
  cluster?: string | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

export function targetLocalCluster(flags: ClusterFlags): string {
  const named = flags.cluster ?? (process.env.NODEWARDEN_CLUSTER || undefined);
  return named ?? clusterOfKubeconfig(flags.kubeconfig, flags.context);
}

function clusterOfKubeconfig(kubeconfig: string | undefined, context: string | undefined): string {
  const kc = new KubeConfig();
  try {
    if (kubeconfig) kc.loadFromFile(kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new Error(
      `cannot read ${kubeconfig ?? process.env.KUBECONFIG ?? 'the kubeconfig'}: ${(err as Error).message}`,
    );
  }
  if (context) {
    if (!kc.getContextObject(context)) throw new UsageError(`no context "${context}" in the kubeconfig`);
    kc.setCurrentContext(context);
  }
  const server = kc.getCurrentCluster()?.server;
  const name = server && URL.canParse(server) ? localClusterAt(server) : undefined;
  if (name) return name;
  throw new Error(
    `the kubeconfig's ${context ? `context "${context}"` : 'current context'} (${server ?? 'no server'}) is no local cluster; ` +
      'give --cluster NAME ("nodewarden cluster list" shows them) or --endpoint URL',
  );
}
