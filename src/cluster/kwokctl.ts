// A thin wrapper over kwokctl's binary runtime, which starts etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
// controller as local processes. We give it every binary path (its defaults
// are download URLs) and bind everything to loopback.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

  /** The kwokctl configuration every cluster is created from: local binaries, loopback only. */
  writeConfig(path: string): void {
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
      },
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
}
