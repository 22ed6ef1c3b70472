// Preloaded (node --import) into a nodewarden process by command-footprint.test.ts:
// writes the URL of every module the process loaded, one a line, to
// $NODEWARDEN_LOADED_MODULES when it exits.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    loaded.add(url);
    return nextLoad(url, context);
  },
});
process.on('exit', () => {
  const out = process.env.NODEWARDEN_LOADED_MODULES;
  if (out) writeFileSync(out, [...loaded].join('\n'));
});
