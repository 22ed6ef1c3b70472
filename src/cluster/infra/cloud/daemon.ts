// Entry of the simulated cloud's own process: `cluster up` runs this file with
// `serve --dir DIR` (see addon.ts), so the cloud starts without going through
// the nodewarden command's dispatcher.
import { cloudCommand } from './cli.ts';

cloudCommand(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    console.error(`simulated cloud: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
