// Runs a nodewarden command in process, as the suites of the consoles and the
// capabilities' commands do, and hands back its exit code and what it wrote.
import type { CommandIO } from '../../src/cli/command.ts';

export interface CommandRun {
  code: number;
  out: string;
  err: string;
}

export async function runCommand(
  command: (args: string[], io: CommandIO) => Promise<number>,
  args: string[],
): Promise<CommandRun> {
  const out: string[] = [];
  const err: string[] = [];
  const io = {
    out: { write: (s: string) => out.push(s) > 0 },
    err: { write: (s: string) => err.push(s) > 0 },
  } as unknown as CommandIO;
  const code = await command(args, io);
  return { code, out: out.join(''), err: err.join('') };
}
