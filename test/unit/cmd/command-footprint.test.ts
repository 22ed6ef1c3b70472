// #14: a capability's command loads its own CLI and nothing else: no CRD schema
// (TypeBox, ~370 modules and ~0.15 s), no other capability, no simulator, not the
// list of capabilities. Each command runs as a user runs it, in a process of its
// own that records every module it loads; --help loads what any of its verbs
// loads before asking the API server, without a cluster.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { capabilities } from '../../../src/capabilities.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RECORDER = fileURLToPath(new URL('./loaded-modules.ts', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'nw-footprint-'));

/** The modules `nodewarden args…` loads: paths in the checkout relative to it, others (node_modules) whole. */
async function modulesLoadedBy(args: string[]): Promise<string[]> {
  const out = join(scratch, `${args.join('-')}.txt`);
  await promisify(execFile)(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--import', RECORDER, join(ROOT, 'src/cmd/main.ts'), ...args],
    { env: { ...process.env, NODEWARDEN_LOADED_MODULES: out }, timeout: 60_000 },
  );
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith('file:'))
    .map((url) => fileURLToPath(url))
    .map((path) => (path.startsWith(ROOT) ? path.slice(ROOT.length) : path));
}

/** What a command of capability `own` (none: '') loaded and must not: TypeBox once, our modules by path. */
function strangers(modules: string[], own: string): string[] {
  const others = capabilities.map((c) => c.name).filter((name) => name !== own);
  const found = modules.flatMap((m) => {
    if (m.includes('node_modules/typebox/')) return ['typebox (a CRD schema)'];
    const ours = m === 'src/capabilities.ts' || m.startsWith('src/cluster/');
    return ours || others.some((name) => m.startsWith(`src/${name}/`)) ? [m] : [];
  });
  return [...new Set(found)];
}

describe("a capability's command loads its own CLI and nothing else", () => {
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('nodewarden --help: no capability at all, its summaries come from the index', async () => {
    const modules = await modulesLoadedBy(['--help']);
    assert.ok(modules.includes('src/cmd/command-index.json'));
    assert.deepEqual(strangers(modules, ''), []);
  });

  for (const capability of capabilities) {
    for (const command of capability.commands ?? []) {
      it(`nodewarden ${command.name}: no CRD schema, no other capability, no simulator`, async () => {
        const modules = await modulesLoadedBy([command.name, '--help']);
        assert.ok(
          modules.includes(`src/${capability.name}/cli.ts`),
          `nodewarden ${command.name} --help did not load src/${capability.name}/cli.ts`,
        );
        assert.deepEqual(strangers(modules, capability.name), []);
      });
    }
  }
});
