// The simulated cloud as an add-on of every local cluster: `cluster up` starts
// its process (detached; the CLI exits) once the fleet is Ready and publishes
// its endpoint; `cluster down` and `delete` stop it. Its state persists in the
// add-on's folder between runs (see serve.ts).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../../runtime/client.ts';
import { type InfraContext, registerInfrastructure, type SimulatedInfrastructure } from '../index.ts';
import { type AddonProcess, nodeScript, runningPid, startDetached, stopProcess } from '../process.ts';
import { cloudRequest } from './api.ts';
import { publishSimulatedCloud } from './discovery.ts';
import { type CloudConfig, cloudFiles } from './serve.ts';

/** How long the cloud's process may take to restore its state and listen. */
const START_TIMEOUT_MS = 30_000;

function processOf(dir: string): AddonProcess {
  const files = cloudFiles(dir);
  // The folder is on the process's command line (--dir), and unique to the cluster.
  return { pidFile: files.pid, logFile: files.log, marker: dir };
}

/** The endpoint of the cluster's cloud if its process runs. */
export function runningCloudEndpoint(dir: string): string | undefined {
  const { endpoint } = cloudFiles(dir);
  if (runningPid(processOf(dir)) === undefined || !existsSync(endpoint)) return undefined;
  return readFileSync(endpoint, 'utf8').trim() || undefined;
}

export const simulatedCloud: SimulatedInfrastructure = {
  name: 'cloud',

  async up(ctx: InfraContext): Promise<void> {
    const files = cloudFiles(ctx.dir);
    let endpoint = runningCloudEndpoint(ctx.dir);
    if (endpoint) {
      if (ctx.bootDelayMs !== undefined)
        await cloudRequest(endpoint, 'POST', '/settings', { bootDelayMs: ctx.bootDelayMs });
    } else {
      const config: CloudConfig = {
        cluster: ctx.cluster,
        kubeconfig: ctx.kubeconfig,
        pools: ctx.pools,
        kubernetesVersion: ctx.kubernetesVersion,
        ...(ctx.bootDelayMs !== undefined ? { bootDelayMs: ctx.bootDelayMs } : {}),
        ...(previousPort(files.endpoint) ? { preferredPort: previousPort(files.endpoint) } : {}),
      };
      rmSync(files.endpoint, { force: true });
      writeFileSync(files.config, `${JSON.stringify(config, null, 2)}\n`);
      const { command, args } = nodeScript(import.meta.url, './daemon');
      // A test runner's marker in the environment would make the child report to it.
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      startDetached(processOf(ctx.dir), command, [...args, 'serve', '--dir', ctx.dir], { cwd: ctx.dir, env });
      endpoint = await waitForEndpoint(ctx.dir);
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
    await stopProcess(processOf(ctx.dir));
  },

  async endpoint(ctx: InfraContext): Promise<string | undefined> {
    return runningCloudEndpoint(ctx.dir);
  },
};

registerInfrastructure(simulatedCloud);

function previousPort(endpointFile: string): number | undefined {
  if (!existsSync(endpointFile)) return undefined;
  const port = Number(new URL(readFileSync(endpointFile, 'utf8').trim()).port);
  return Number.isInteger(port) && port > 0 ? port : undefined;
}

async function waitForEndpoint(dir: string): Promise<string> {
  const files = cloudFiles(dir);
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (existsSync(files.endpoint)) return readFileSync(files.endpoint, 'utf8').trim();
    if (runningPid(processOf(dir)) === undefined) {
      throw new Error(`the simulated cloud exited while starting:\n${logTail(files.log)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stopProcess(processOf(dir)).catch(() => {});
  throw new Error(`the simulated cloud did not start within ${START_TIMEOUT_MS / 1000}s; see ${files.log}`);
}

function logTail(path: string): string {
  if (!existsSync(path)) return '(no log)';
  return readFileSync(path, 'utf8').trim().split('\n').slice(-8).join('\n');
}
