// make lint's rule on function length (biome.jsonc: noExcessiveLinesPerFunction,
// 80 lines, src/ only) fires: a long function written into a scratch tree laid
// out like ours is reported in src/ and let through in test/ and in a short one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIOME = join(ROOT, 'node_modules/.bin/biome');
const scratch = mkdtempSync(join(tmpdir(), 'nw-lint-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A function of `lines` statements, formatted as biome prints it. */
function functionOf(lines: number): string {
  const body = Array.from({ length: lines }, (_, i) => `  const a${i} = ${i};\n`).join('');
  return `export function f(): number {\n${body}  return a0;\n}\n`;
}

/** The files biome reports under noExcessiveLinesPerFunction, linting `files` with our config. */
function longFunctionReports(files: Record<string, string>): string[] {
  const dir = mkdtempSync(join(scratch, 'tree-'));
  const config = readFileSync(join(ROOT, 'biome.jsonc'), 'utf8').replace(/"\$schema":[^\n]*\n/, '');
  writeFileSync(join(dir, 'biome.jsonc'), config);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const run = spawnSync(BIOME, ['lint', '--reporter=json', '--max-diagnostics=100', ...Object.keys(files)], {
    cwd: dir,
    encoding: 'utf8',
  });
  const report = JSON.parse(run.stdout) as {
    diagnostics: { category: string; location: { path: string } }[];
  };
  return report.diagnostics
    .filter((d) => d.category === 'lint/complexity/noExcessiveLinesPerFunction')
    .map((d) => d.location.path)
    .sort();
}

describe('the function-length rule', () => {
  it('reports a function over 80 lines in src/', () => {
    assert.deepEqual(longFunctionReports({ 'src/long.ts': functionOf(85) }), ['src/long.ts']);
  });

  it('lets a function of 80 lines through, and long test bodies', () => {
    assert.deepEqual(
      longFunctionReports({ 'src/short.ts': functionOf(70), 'test/unit/long.test.ts': functionOf(120) }),
      [],
    );
  });
});
