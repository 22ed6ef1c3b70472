// The one-way rules of .dependency-cruiser.cjs (run by make lint) catch what
// they are meant to: each forbidden import below, written into a scratch tree
// laid out like ours, is reported under the rule that names it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs'));

/** Violated rule names when cruising `files` (path → source) laid out under a scratch src/. */
async function violations(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'nw-arch-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const result = await cruise(['src'], {
        ruleSet: { forbidden: config.forbidden },
        doNotFollow: { path: 'node_modules' },
        enhancedResolveOptions: { extensions: ['.ts'] },
        tsPreCompilationDeps: true,
        validate: true,
      });
      const output = result.output as { summary: { violations: { rule: { name: string } }[] } };
      return [...new Set(output.summary.violations.map((v) => v.rule.name))].sort();
    } finally {
      process.chdir(cwd);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const leaf = 'export const x = 1;\n';
const uses = (spec: string) => `import { x } from '${spec}';\nexport const y = x;\n`;

describe('the one-way import rules', () => {
  it('let a tree that keeps them through', async () => {
    assert.deepEqual(
      await violations({
        'src/runtime/client.ts': leaf,
        'src/api/upgrade.ts': uses('../runtime/client.ts'),
        'src/capability.ts': uses('./api/upgrade.ts'),
        'src/cluster/infra/cloud/protocol.ts': uses('../../../runtime/client.ts'),
        'src/upgrade/providers/interface.ts': leaf,
        'src/upgrade/providers/simulated/provider.ts': uses('../../../cluster/infra/cloud/protocol.ts'),
        'src/upgrade/providers/clusterapi/provider.ts': uses('../interface.ts'),
        'src/upgrade/providers/from-flags.ts': uses('./simulated/provider.ts'),
        'src/upgrade/capability.ts': uses('../cluster/infra/cloud/addon.ts'),
        'src/cluster/infra/cloud/addon.ts': uses('../../../runtime/client.ts'),
        'src/maintenance/controller.ts': uses('../api/upgrade.ts'),
        'src/capabilities.ts': uses('./maintenance/controller.ts'),
        'src/operator/cli.ts': uses('../capabilities.ts'),
      }),
      [],
    );
  });

  const cases: [string, Record<string, string>, string][] = [
    [
      'the runtime importing a capability',
      { 'src/upgrade/planner.ts': leaf, 'src/runtime/cache.ts': uses('../upgrade/planner.ts') },
      'runtime-is-the-floor',
    ],
    [
      'a simulator importing a capability',
      {
        'src/upgrade/providers/interface.ts': leaf,
        'src/cluster/infra/cloud/state.ts': uses('../../../upgrade/providers/interface.ts'),
      },
      'cluster-imports-no-capability',
    ],
    [
      "a capability importing another's code",
      { 'src/maintenance/duration.ts': leaf, 'src/upgrade/observe.ts': uses('../maintenance/duration.ts') },
      'capability-reaches-another-only-through-api',
    ],
    [
      'a capability importing the operator',
      { 'src/operator/controllers.ts': leaf, 'src/upgrade/register.ts': uses('../operator/controllers.ts') },
      'capability-below-composition',
    ],
    [
      "a capability reaching into a simulator's state",
      {
        'src/cluster/infra/cloud/state.ts': leaf,
        'src/upgrade/cloud.ts': uses('../cluster/infra/cloud/state.ts'),
      },
      'capability-sees-a-simulator-by-its-face',
    ],
    [
      "a controller speaking a simulator's protocol, not its seam's contract",
      {
        'src/cluster/infra/hypervisor/protocol.ts': leaf,
        'src/kvm/controllers/cluster.ts': uses('../../cluster/infra/hypervisor/protocol.ts'),
      },
      'simulator-reached-only-by-its-simulated-implementation',
    ],
    [
      'a real implementation of a seam importing the simulated one',
      {
        'src/baremetal/virtualhosts/hypervisors/simulated/hypervisors.ts': leaf,
        'src/baremetal/virtualhosts/hypervisors/libvirt/hypervisors.ts': uses('../simulated/hypervisors.ts'),
      },
      'implementations-of-a-seam-never-import-each-other',
    ],
    [
      'a simulated implementation of a seam importing the real one',
      {
        'src/upgrade/providers/clusterapi/templates.ts': leaf,
        'src/upgrade/providers/simulated/provider.ts': uses('../clusterapi/templates.ts'),
      },
      'implementations-of-a-seam-never-import-each-other',
    ],
    [
      'the contract importing a capability',
      { 'src/upgrade/options.ts': leaf, 'src/capability.ts': uses('./upgrade/options.ts') },
      'contract-is-a-leaf',
    ],
    [
      'two modules importing each other',
      {
        'src/runtime/builder.ts': uses('./manager.ts'),
        'src/runtime/manager.ts': `import { y } from './builder.ts';\nexport const x = y;\n`,
      },
      'no-circular',
    ],
  ];
  for (const [what, files, rule] of cases) {
    it(`refuse ${what} (${rule})`, async () => {
      assert.ok((await violations(files)).includes(rule), `expected ${rule}`);
    });
  }
});
