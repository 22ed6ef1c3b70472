// bin/nodewarden as a user runs it (from source): for tests about output, messages and exit statuses.
import { execFile } from 'node:child_process';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '../../bin/nodewarden');

export interface BinaryResult {
  code: number;
  out: string;
  err: string;
}

/** Runs `nodewarden args…`; its exit status, stdout and stderr. `env` adds to the test's environment. */
export function nodewarden(args: string[], env: Record<string, string> = {}): Promise<BinaryResult> {
  return new Promise((resolve) => {
    execFile(
      BIN,
      args,
      { env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1', ...env }, timeout: 120_000 },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
  });
}

/**
 * Starts `nodewarden args…`, waits until its output matches `ready`, sends
 * SIGINT (Ctrl-C) and resolves with how it ended.
 */
export function interrupted(
  args: string[],
  ready: RegExp,
  env: Record<string, string> = {},
): Promise<BinaryResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      BIN,
      args,
      { env: { ...process.env, NODEWARDEN_FROM_SOURCE: '1', ...env }, timeout: 120_000 },
      (error, out, err) => resolve({ code: error ? Number(error.code ?? 1) : 0, out, err }),
    );
    let seen = '';
    const look = (chunk: Buffer | string) => {
      seen += chunk.toString();
      if (ready.test(seen)) {
        ready = /$^/; // once
        child.kill('SIGINT');
      }
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', look);
    child.on('error', reject);
  });
}
