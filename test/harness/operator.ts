// Runs `nodewarden operator` as a child process against the run's cluster, the
// way a user runs it out of cluster, and collects its JSON logs.
import { type ChildProcess, spawn } from 'node:child_process';
import { testKubeconfigPath } from './cluster.ts';

export interface OperatorProcess {
  proc: ChildProcess;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const started: OperatorProcess[] = [];
// Not an after() hook: root hooks run in registration order, and this module is
// imported before the test file registers the cleanup that still needs the operator.
process.on('exit', () => {
  for (const op of started) op.proc.kill('SIGKILL');
});

/** `kubeconfig` (default: the run's cluster) and extra `env` let a suite run replicas of its own. */
export function startOperator(
  args: string[],
  opts: { kubeconfig?: string; env?: Record<string, string> } = {},
): OperatorProcess {
  const proc = spawn(
    process.execPath,
    [
      'src/cmd/main.ts',
      'operator',
      '--kubeconfig',
      opts.kubeconfig ?? testKubeconfigPath(),
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--health-probe-bind-address',
      '127.0.0.1:0',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}) },
  );
  const logs: Record<string, unknown>[] = [];
  let buf = '';
  proc.stdout?.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        logs.push(JSON.parse(line));
      } catch {
        // not JSON
      }
    }
  });
  // A child left running (a failed test's cleanup) must not keep the test process alive.
  proc.unref();
  (proc.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  const op: OperatorProcess = {
    proc,
    logs,
    exited,
    stop: (signal = 'SIGTERM') => {
      proc.kill(signal);
      return exited;
    },
  };
  started.push(op);
  return op;
}
