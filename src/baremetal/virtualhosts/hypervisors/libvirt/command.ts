// Running the host's tools (virsh, ip, qemu-img): arguments as a list, never a
// shell line; a failure says which command failed and what it printed.
import { execFile } from 'node:child_process';

export class CommandError extends Error {
  readonly stderr: string;
  readonly code: number | string | undefined;
  constructor(message: string, stderr: string, code: number | string | undefined) {
    super(message);
    this.name = 'CommandError';
    this.stderr = stderr;
    this.code = code;
  }
}

export interface RunOptions {
  /** Default 60 s: a virsh call against a busy libvirtd can take seconds. */
  timeoutMs?: number;
}

/** Runs `command args…`; its stdout, or a CommandError with its stderr. */
export function runCommand(command: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args],
      { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const said = (stderr || err.message).trim().split('\n').slice(-3).join(' ');
        reject(
          new CommandError(
            `${command} ${args.slice(0, 4).join(' ')}: ${said}`,
            stderr,
            err.code ?? undefined,
          ),
        );
      },
    );
  });
}
