// A thin wrapper over kwokctl's binary runtime, which starts etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
// controller as local processes. We give it every binary path (its defaults
// are download URLs) and bind everything to loopback.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneAdditions } from './real-nodes/control-plane.ts';
import type { BinPaths } from './toolchain.ts';

export interface KwokctlRun {
  code: number;
  stdout: string;
  stderr: string;
}

export class Kwokctl {
  private readonly bins: BinPaths;
  /** KWOK_WORKDIR: clusters live in <workdir>/clusters/<name>/. */
  readonly workdir: string;

  constructor(bins: BinPaths, workdir: string) {
    this.bins = bins;
    this.workdir = workdir;
  }

  clusterDir(name: string): string {
    return join(this.workdir, 'clusters', name);
  }

  /**
   * The kwokctl configuration every cluster is created from: local binaries, loopback only;
   * `additions` for a cluster with real nodes (see real-nodes/control-plane.ts).
   */
  writeConfig(path: string, additions?: ControlPlaneAdditions): void {
    const b = this.bins;
    const config = {
      apiVersion: 'config.kwok.x-k8s.io/v1alpha1',
      kind: 'KwokctlConfiguration',
      options: {
        runtime: 'binary',
        bindAddress: '127.0.0.1',
        kubeApiserverBinary: b['kube-apiserver'],
        kubeControllerManagerBinary: b['kube-controller-manager'],
        kubeSchedulerBinary: b['kube-scheduler'],
        kubectlBinary: b.kubectl,
        etcdBinary: b.etcd,
        kwokControllerBinary: b.kwok,
        // Simulated nodes and pods are cheap; let the components talk to the
        // API server as fast as it answers, or 1000-node clusters crawl.
        disableQPSLimits: true,
        ...(additions ? { kubeApiserverCertSANs: additions.certSans } : {}),
      },
      // One controller-manager and one scheduler per cluster: nothing to elect. With election on,
      // a restarted one waits out the lease its predecessor left (15 s) before it does anything.
      componentsPatches: componentPatches(additions),
    };
    // kwok's defaults (4 workers each) make a 1000-node fleet take many seconds to turn Ready.
    const kwok = {
      apiVersion: 'config.kwok.x-k8s.io/v1alpha1',
      kind: 'KwokConfiguration',
      options: { nodePlayStageParallelism: 16, nodeLeaseParallelism: 16, podPlayStageParallelism: 16 },
    };
    writeFileSync(path, `${JSON.stringify(config, null, 2)}\n---\n${JSON.stringify(kwok, null, 2)}\n`);
  }

  run(args: string[], opts: { inherit?: boolean; signal?: AbortSignal } = {}): Promise<KwokctlRun> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.bins.kwokctl, args, {
        env: { ...process.env, KWOK_WORKDIR: this.workdir },
        stdio: ['ignore', 'pipe', 'pipe'],
        signal: opts.signal,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (opts.inherit) process.stderr.write(d);
      });
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
  }

  async mustRun(args: string[], opts: { inherit?: boolean; signal?: AbortSignal } = {}): Promise<string> {
    const r = await this.run(args, opts);
    if (r.code !== 0) {
      const detail = (r.stderr || r.stdout).trim().split('\n').slice(-8).join('\n');
      throw new Error(`kwokctl ${args.join(' ')} failed (exit ${r.code}):\n${detail}`);
    }
    return r.stdout;
  }

  /**
   * Stops one of a running cluster's components, leaving the others up (kwokctl
   * itself only stops them all): SIGTERM to the pid kwokctl recorded, SIGKILL if
   * it has not gone within `timeoutMs`. `kwokctl start cluster` starts it again,
   * as it starts only what does not run. No-op when the component does not run.
   */
  async stopComponent(cluster: string, component: string, timeoutMs = 10_000): Promise<void> {
    const pid = this.componentPid(cluster, component);
    if (pid === undefined) return;
    signal(pid, 'SIGTERM');
    const deadline = Date.now() + timeoutMs;
    let killed = false;
    while (alive(pid)) {
      if (Date.now() > deadline + timeoutMs)
        throw new Error(`${component} of cluster "${cluster}" (pid ${pid}) did not stop`);
      if (!killed && Date.now() > deadline) {
        signal(pid, 'SIGKILL');
        killed = true;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    // As kwokctl does: without its pid file the component counts as stopped even where the
    // exited process lingers as a zombie nobody reaps (a container whose init does not).
    rmSync(this.pidFile(cluster, component), { force: true });
  }

  private pidFile(cluster: string, component: string): string {
    return join(this.clusterDir(cluster), 'pids', `${component}.pid`);
  }

  /** The pid of a component that runs, from kwokctl's pid file; undefined when it does not run. */
  componentPid(cluster: string, component: string): number | undefined {
    const file = this.pidFile(cluster, component);
    if (!existsSync(file)) return undefined;
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
    // A stale pid file may name a pid since reused by another program: only ever signal our binary.
    const cmdline = `/proc/${pid}/cmdline`;
    if (
      existsSync('/proc/self') &&
      !(existsSync(cmdline) && readFileSync(cmdline, 'utf8').includes(component))
    )
      return undefined;
    return pid;
  }
}

/** kwokctl's componentsPatches: ours for every cluster, then the additions' flags. */
function componentPatches(additions: ControlPlaneAdditions | undefined) {
  const args: Record<string, Record<string, string>> = {
    'kube-controller-manager': { 'leader-elect': 'false' },
    'kube-scheduler': { 'leader-elect': 'false' },
  };
  for (const [name, flags] of Object.entries(additions?.extraArgs ?? {}))
    args[name] = { ...args[name], ...flags };
  return Object.entries(args).map(([name, flags]) => ({
    name,
    extraArgs: Object.entries(flags).map(([key, value]) => ({ key, value })),
  }));
}

/** Whether the process runs; a zombie (exited, not yet reaped by whoever adopted it) does not. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; the state follows the last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (macOS): the signal answered
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}
