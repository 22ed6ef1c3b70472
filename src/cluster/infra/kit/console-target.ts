// Which running simulator a console command (nodewarden cloud, bmc,
// hypervisor) talks to when no --endpoint is given: the one of the local
// cluster --cluster (or $NODEWARDEN_CLUSTER, or the kubeconfig's context)
// names, found by its folder; an error saying how to start it otherwise.
import { existsSync } from 'node:fs';
import { targetLocalCluster } from '../../../cli/local-target.ts';
import type { Invocation } from '../../../cli/verbs.ts';
import { infraDir } from '../../control-plane.ts';

export interface ConsoleSimulator {
  /** Its add-on's folder name, e.g. "cloud". */
  name: string;
  /** For messages, e.g. "simulated cloud". */
  title: string;
  /** Its endpoint when its process runs. */
  running(dir: string): string | undefined;
}

export function runningSimulator(inv: Invocation, s: ConsoleSimulator): { dir: string; endpoint: string } {
  const cluster = targetLocalCluster({
    cluster: inv.string('cluster'),
    kubeconfig: inv.string('kubeconfig'),
    context: inv.string('context'),
  });
  const dir = infraDir(cluster, s.name);
  const endpoint = s.running(dir);
  if (endpoint) return { dir, endpoint };
  throw new Error(
    existsSync(dir)
      ? `the ${s.title} of cluster "${cluster}" is not running: nodewarden cluster up --name ${cluster}`
      : `cluster "${cluster}" has no ${s.title}: nodewarden cluster up --name ${cluster}`,
  );
}
