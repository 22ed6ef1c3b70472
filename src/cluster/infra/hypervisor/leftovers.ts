// The workload control planes' processes a hypervisor that died (SIGKILL, a
// crash) left running: kwokctl records each component's pid under
// <cluster>/pids/, so `cluster down` and `delete` can still stop them, without
// the binaries or kwokctl, and never a process that merely reuses a pid.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { stopProcess } from '../kit/process.ts';
import { workloadsDir } from './workloads.ts';

/** Stops every component still running under the add-on's folder; returns how many it stopped. */
export async function stopLeftoverComponents(addonDir: string): Promise<number> {
  const root = join(workloadsDir(addonDir), 'clusters');
  if (!existsSync(root)) return 0;
  let stopped = 0;
  for (const cluster of readdirSync(root)) {
    const dir = join(root, cluster);
    const pids = join(dir, 'pids');
    if (!existsSync(pids)) continue;
    for (const file of readdirSync(pids).filter((f) => f.endsWith('.pid'))) {
      // Each component's command line names its cluster's folder (its kubeconfig, its data).
      const component = { pidFile: join(pids, file), logFile: '', marker: dir };
      if (await stopProcess(component, 2000)) stopped++;
    }
  }
  return stopped;
}
