// Ctrl-C while a command waits on the operator (--wait): the work is the
// operator's, so stopping the wait stops nothing. Say so, and how to follow or
// stop the work, rather than leave the user guessing whether Ctrl-C undid it.
import type { CommandIO } from './command.ts';

/** The exit status of a command ended by SIGINT, as shells report it. */
export const INTERRUPTED = 130;

/**
 * Until the returned function is called, SIGINT and SIGTERM end the command
 * with `lines` on stderr and exit status 130. `exit` is for tests.
 */
export function sayOnInterrupt(
  io: CommandIO,
  lines: string[],
  exit: (code: number) => void = (code) => process.exit(code),
): () => void {
  const onSignal = () => {
    io.err.write(`\n${lines.join('\n')}\n`);
    exit(INTERRUPTED);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
