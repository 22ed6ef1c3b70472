import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KindNames } from '../../src/api/kinds.ts';
import * as kinds from '../../src/api/kinds.ts';
import {
  capabilities,
  commandsOf,
  controllersOf,
  customResourcesOf,
  simulatorsOf,
  webhooksOf,
} from '../../src/capabilities.ts';
import type { AnyCapability } from '../../src/capability.ts';
import type { SimulatedInfrastructure } from '../../src/cluster/infra/index.ts';
import { operatorHelp } from '../../src/operator/cli.ts';

const sim = (name: string, command?: string): SimulatedInfrastructure =>
  ({
    name,
    up: async () => {},
    down: async () => {},
    ...(command ? { command: { name: command, summary: '', run: async () => 0 } } : {}),
  }) as SimulatedInfrastructure;

const cap = (name: string, more: Partial<AnyCapability> = {}): AnyCapability => ({
  name,
  customResources: [],
  controllers: [{ name: `${name}-ctl`, description: '', rbac: [], setup: () => {} }],
  ...more,
});

describe('the capability list', () => {
  it('names every controller, webhook path and command once across the shipped capabilities', async () => {
    const names = controllersOf(capabilities).map((c) => c.name);
    assert.equal(new Set(names).size, names.length);
    const paths = webhooksOf(capabilities).map((w) => w.path);
    assert.equal(new Set(paths).size, paths.length);
    const commands = (await commandsOf(capabilities)).map((c) => c.name);
    assert.equal(new Set(commands).size, commands.length);
  });

  it('ships each custom resource once, from exactly one capability', () => {
    const names = customResourcesOf(capabilities).map((cr) => cr.name);
    assert.equal(new Set(names).size, names.length);
    assert.ok(names.length > 0);
  });

  it('addresses every custom resource by names from src/api/kinds.ts, which commands load without schemas', () => {
    const named = Object.values(kinds).filter((k): k is KindNames => typeof k === 'object' && 'plural' in k);
    for (const cr of customResourcesOf(capabilities)) {
      const entry = named.find((k) => k.group === cr.type.group && k.kind === cr.type.kind);
      assert.ok(entry, `src/api/kinds.ts has no entry for ${cr.name}`);
      const { group, version, kind, plural, namespaced } = entry;
      assert.deepEqual(cr.type, { group, version, kind, plural, namespaced }, cr.name);
    }
  });

  it('refuses a controller declared by two capabilities', () => {
    assert.throws(
      () => controllersOf([cap('a'), cap('b', { controllers: cap('a').controllers })]),
      /controller "a-ctl" is declared twice/,
    );
  });

  it('starts a simulator two capabilities need once, and lists its console as a command', async () => {
    const shared = sim('bmc', 'bmc');
    const infrastructure = async () => [shared];
    const list = [cap('hosts', { infrastructure }), cap('tenants', { infrastructure })];
    assert.deepEqual(
      (await simulatorsOf(list)).map((s) => s.name),
      ['bmc'],
    );
    assert.deepEqual(
      (await commandsOf(list)).map((c) => c.name),
      ['bmc'],
    );
  });

  it("puts each capability's own operator flags in the operator's help, under its name", () => {
    const help = operatorHelp([
      cap('hosts', {
        flags: [
          { name: 'bmc-timeout', type: 'string', placeholder: 'D', help: 'how long a BMC call may take' },
        ],
      }),
    ]);
    assert.match(help, /\nhosts:\n {2}--bmc-timeout D +how long a BMC call may take\n/);
    assert.match(help, /Controllers: hosts-ctl$/);
  });
});
