import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseArgs } from 'node:util';
import { capabilities } from '../../../src/capabilities.ts';
import type { OperatorFlag } from '../../../src/capability.ts';
import {
  parseOptions,
  RUNTIME_FLAGS,
  RuntimeFlagValues,
  withDefaultInHelp,
} from '../../../src/operator/flags.ts';

const flag = (over: Partial<OperatorFlag>): OperatorFlag => ({
  name: 'x',
  type: 'string',
  help: 'what it does',
  ...over,
});

describe("the operator's help says each runtime flag's default from its table entry", () => {
  const rows: [string, OperatorFlag, string][] = [
    ['a string default after the help', flag({ default: '30' }), 'what it does (default 30)'],
    ['no default: the help as written', flag({}), 'what it does'],
    ['a boolean default is not said', flag({ type: 'boolean', default: false }), 'what it does'],
    [
      'after the last line of a help of several lines',
      flag({ help: 'first line\nsecond line', default: 'x' }),
      'first line\nsecond line (default x)',
    ],
    [
      'on a line of its own when the line would grow too long',
      flag({
        help: 'ValidatingWebhookConfiguration to keep the caBundle of',
        default: 'nodewarden-validating-webhook-configuration',
      }),
      'ValidatingWebhookConfiguration to keep the caBundle of\n(default nodewarden-validating-webhook-configuration)',
    ],
  ];
  for (const [name, given, want] of rows) it(name, () => assert.equal(withDefaultInHelp(given).help, want));

  it("never says a default by hand beside one in the table, the runtime's flags or a capability's", () => {
    const all = [...RUNTIME_FLAGS, ...capabilities.flatMap((c) => c.flags ?? [])];
    for (const f of all) if (f.default !== undefined) assert.doesNotMatch(f.help, /\(default/, `--${f.name}`);
  });
});

describe('the runtime flags parsed', () => {
  const parse = (args: string[]) =>
    new RuntimeFlagValues(parseArgs({ args, options: parseOptions(RUNTIME_FLAGS) }).values);

  it("read the table's defaults when not given", () => {
    const flags = parse([]);
    for (const f of RUNTIME_FLAGS)
      if (typeof f.default === 'string' && !f.env)
        assert.equal(flags.string(f.name), f.default, `--${f.name}`);
    assert.equal(flags.on('leader-elect'), false);
  });

  it('read what was given over the default', () => {
    const flags = parse(['--qps', '5', '--leader-elect', '--kubeconfig', '/k']);
    assert.equal(flags.string('qps'), '5');
    assert.equal(flags.on('leader-elect'), true);
    assert.equal(flags.optional('kubeconfig'), '/k');
  });

  it('refuse to read a flag without a default as always set', () => {
    assert.throws(() => parse([]).string('kubeconfig'), /--kubeconfig has no default/);
  });
});
