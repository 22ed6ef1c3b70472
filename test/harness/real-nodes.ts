// For tests on real nodes (kubelet, containerd, runc): whether this machine can
// run them, the cluster they make, kubectl against it, and what every real node
// must leave behind when its cluster is deleted: nothing.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hierarchies } from '../../src/cluster/real-nodes/cgroups.ts';
import { GUARDED_SYSCTLS } from '../../src/cluster/real-nodes/configs.ts';
import { controlPlaneBinaries, REPO_ROOT } from '../../src/cluster/toolchain.ts';
import { nodewarden } from './binary.ts';

const exec = promisify(execFile);
const VERSION = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;

/** The test app the node runtime build packs (hack/noderuntime/testapp). */
export const TESTAPP_IMAGE = `localhost/nodewarden-testapp:${VERSION}`;

/** How a test app Deployment ends its pods, when it is to show that it ends them gracefully. */
export interface GracefulEnd {
  /** How long the preStop hook sleeps after it has written its line. */
  sleepSeconds: number;
  /** Where the hook writes (the volume `proof`, mounted at /proof): whether its line outlives the pod. */
  proof: object;
}

/**
 * The test app serving :8080 on the real nodes, Ready when /healthz answers;
 * spread one a node when `spread` says how strictly, and with a preStop hook
 * (10 s grace) that writes /proof/prestop.log when `gracefulEnd` is given.
 */
export function testappDeployment(opts: {
  name: string;
  namespace?: string;
  replicas: number;
  spread?: 'DoNotSchedule' | 'ScheduleAnyway';
  gracefulEnd?: GracefulEnd;
}) {
  const { name, gracefulEnd: end } = opts;
  const labels = { app: name };
  const spread = opts.spread && [
    {
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: opts.spread,
      labelSelector: { matchLabels: labels },
    },
  ];
  const preStop = end && {
    exec: {
      command: ['/testapp', 'prestop', '--file', '/proof/prestop.log', '--sleep', String(end.sleepSeconds)],
    },
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, ...(opts.namespace ? { namespace: opts.namespace } : {}) },
    spec: {
      replicas: opts.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { 'nodewarden.dev/real': 'true' },
          ...(spread ? { topologySpreadConstraints: spread } : {}),
          ...(end ? { terminationGracePeriodSeconds: 10 } : {}),
          containers: [
            {
              name: 'web',
              image: TESTAPP_IMAGE,
              imagePullPolicy: 'Never',
              args: ['serve', '--port', '8080'],
              readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
              ...(end
                ? { lifecycle: { preStop }, volumeMounts: [{ name: 'proof', mountPath: '/proof' }] }
                : {}),
            },
          ],
          ...(end ? { volumes: [{ name: 'proof', ...end.proof }] } : {}),
        },
      },
    },
  };
}

/** Why real nodes cannot run here, or false when they can. */
export function realNodesSkipReason(): string | false {
  if (process.platform !== 'linux') return 'real nodes need Linux (namespaces, cgroups)';
  if (process.getuid?.() !== 0) return 'real nodes need root: runc runs containers as root on these machines';
  const missing = ['ip', 'nsenter', 'unshare', 'iptables', 'runc'].filter(
    (t) => !['/usr/sbin', '/usr/bin', '/sbin', '/bin'].some((d) => existsSync(join(d, t))),
  );
  if (missing.length) return `missing ${missing.join(', ')} (hack/debian-packages.sh installs them)`;
  if (!existsSync('/usr/lib/cni/bridge'))
    return 'missing the CNI plugins in /usr/lib/cni (containernetworking-plugins)';
  return false;
}

/** Runs `nodewarden cluster …` and throws with its output when it fails. */
export async function clusterCommand(...args: string[]): Promise<string> {
  const r = await nodewarden(['cluster', ...args]);
  if (r.code !== 0)
    throw new Error(`nodewarden cluster ${args.join(' ')} failed (${r.code}):\n${r.err}\n${r.out}`);
  return `${r.out}${r.err}`;
}

/** kubectl with the cluster's kubeconfig; stdout. */
export async function kubectl(kubeconfig: string, ...args: string[]): Promise<string> {
  const bins = await controlPlaneBinaries({ quiet: true });
  try {
    return (await exec(bins.kubectl, ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** `kubectl apply` of one object, given as JSON on stdin. */
export async function kubectlApply(kubeconfig: string, obj: object): Promise<void> {
  const bins = await controlPlaneBinaries({ quiet: true });
  await new Promise<void>((resolve, reject) => {
    const child = spawn(bins.kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d;
    });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`kubectl apply: ${err}`))));
    child.stdin.end(JSON.stringify(obj));
  });
}

/** The host values of the sysctls kubelet would otherwise change machine-wide. */
export function hostSysctls(): Record<string, string> {
  return Object.fromEntries(
    Object.keys(GUARDED_SYSCTLS).map((k) => [k, readFileSync(`/proc/sys/${k}`, 'utf8').trim()]),
  );
}

/** Everything of a cluster's real nodes still on the host: processes, mounts, namespaces, cgroups. */
export async function leftovers(cluster: string, clusterDir: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(clusterDir) || cmd.includes(`nw-${cluster}`))
        found.push(`process ${pid}: ${cmd.slice(0, 120)}`);
    } catch {
      // exited meanwhile
    }
  }
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n'))
    if (line.includes(clusterDir)) found.push(`mount: ${line}`);
  const { stdout } = await exec('ip', ['netns', 'list']);
  for (const ns of stdout.split('\n').map((l) => l.split(' ')[0]))
    if (ns === `nw-${cluster}` || ns?.startsWith(`nw-${cluster}-`)) found.push(`network namespace ${ns}`);
  for (const h of hierarchies())
    if (existsSync(join(h, 'nodewarden', cluster))) found.push(`cgroup ${join(h, 'nodewarden', cluster)}`);
  return found;
}

/** `up` of a running cluster, as the product does it: starts every real-node process that does not run. */
export async function restartRealNodes(cluster: string): Promise<void> {
  const { openLocalClusters } = await import('./local-clusters.ts');
  await (await openLocalClusters({ quiet: true })).up({ name: cluster });
}
