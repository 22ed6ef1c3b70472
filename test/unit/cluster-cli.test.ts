import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clusterCommand, clusterHelp } from '../../src/cluster/cli.ts';
import { simulatedCloud } from '../../src/cluster/infra/cloud/addon.ts';
import type { SimulatedInfrastructure } from '../../src/cluster/infra/index.ts';

function addon(name: string, upFlags: SimulatedInfrastructure['upFlags']): SimulatedInfrastructure {
  return { name, upFlags, up: async () => {}, down: async () => {} };
}

describe("the add-ons' cluster up flags", () => {
  it('shows none without add-ons', () => {
    assert.doesNotMatch(clusterHelp([]), /--boot-delay/);
  });

  it("shows the cloud's --boot-delay between --port and --timeout, in the help's columns", () => {
    const lines = clusterHelp([simulatedCloud]).split('\n');
    const at = lines.findIndex((l) => l.startsWith('  --boot-delay D'));
    assert.deepEqual(lines.slice(at - 1, at + 3), [
      "  --port PORT      the API server's port on 127.0.0.1 (default: a free one)",
      '  --boot-delay D   how long a machine the simulated cloud launches takes to boot,',
      '                   e.g. 5s, 500ms (default 5s; kept across down/up; see nodewarden cloud)',
      '  --timeout SECS   how long to wait for Ready nodes (default 120)',
    ]);
  });

  it('gives a long flag its own space before the text', () => {
    const help = clusterHelp([addon('bmc', { 'bmc-power-delay': { placeholder: 'DURATION', help: 'x' } })]);
    assert.match(help, /^ {2}--bmc-power-delay DURATION x$/m);
  });

  for (const [what, addons] of [
    ['one of ours', [addon('a', { port: { placeholder: 'P', help: 'x' } })]],
    [
      "another add-on's",
      [
        addon('a', { delay: { placeholder: 'D', help: 'x' } }),
        addon('b', { delay: { placeholder: 'D', help: 'y' } }),
      ],
    ],
  ] as const) {
    it(`refuses a flag that is ${what}`, async () => {
      await assert.rejects(clusterCommand(['status'], addons), /--(port|delay) is declared twice/);
    });
  }
});
