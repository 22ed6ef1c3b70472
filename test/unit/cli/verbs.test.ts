import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  type CommandTable,
  closest,
  dispatch,
  helpOf,
  type Invocation,
  OUTPUT_FLAGS,
  outputFormat,
  parseCommandLine,
  writeDocument,
} from '../../../src/cli/verbs.ts';

/** A command with the shapes the real ones have: a verb with an argument, a deprecated spelling, -o. */
function widgets(seen: Invocation[] = []): CommandTable {
  const record = async (inv: Invocation) => {
    seen.push(inv);
    return 0;
  };
  return {
    name: 'widget',
    common: ['kubeconfig'],
    flags: {
      kubeconfig: { type: 'string', value: 'PATH', help: 'kubeconfig' },
      size: { type: 'string', value: 'N', help: 'how big' },
      'drain-timeout': { type: 'string', value: 'DURATION', help: 'bound on the drain' },
      timeout: { type: 'string', value: 'DURATION', help: 'how long to wait' },
      wait: { type: 'boolean', help: 'wait' },
      shiny: { type: 'boolean', help: 'polish it' },
      'no-shiny': { type: 'boolean', help: 'leave it dull' },
      ...OUTPUT_FLAGS,
    },
    verbs: {
      start: {
        synopsis: 'NAME',
        summary: 'start a widget',
        args: { name: 'NAME', min: 1, max: 1 },
        flags: ['size', 'drain-timeout', 'timeout', 'wait', 'shiny', 'no-shiny'],
        overrides: {
          timeout: {
            type: 'string',
            aliasOf: 'drain-timeout',
            help: '',
            deprecated: 'write --drain-timeout',
          },
        },
        run: record,
      },
      status: { summary: 'show widgets', flags: ['output', 'json', 'timeout'], run: record },
      stop: { summary: 'stop widgets', flags: ['timeout', 'wait'], run: record },
    },
    footer: 'Exit status: 0 done.',
  };
}

const parsed = (argv: string[]) => {
  const inv = parseCommandLine(widgets(), argv);
  assert.ok(!('help' in inv), 'parsed, not help');
  return inv;
};

function capture() {
  const io = { out: '', err: '' };
  return {
    io,
    streams: { out: { write: (c: string) => (io.out += c) }, err: { write: (c: string) => (io.err += c) } },
  };
}

describe('parseCommandLine', () => {
  it('reads the verb, its argument and its flags wherever they stand', () => {
    const inv = parsed(['--size', '3', 'start', 'w-1', '--wait', '--kubeconfig', '/k']);
    assert.equal(inv.verb, 'start');
    assert.deepEqual(inv.args, ['w-1']);
    assert.equal(inv.string('size'), '3');
    assert.equal(inv.string('kubeconfig'), '/k');
    assert.equal(inv.flag('wait'), true);
    assert.equal(inv.flag('shiny'), false);
    assert.equal(inv.string('timeout'), undefined);
  });

  it('takes a negative number as the value of a string flag', () => {
    assert.equal(parsed(['start', 'w', '--size', '-1']).string('size'), '-1');
  });

  it('takes --flag=true and --flag=false the Go way where a --no- flag exists', () => {
    assert.equal(parsed(['start', 'w', '--shiny=true']).flag('shiny'), true);
    assert.equal(parsed(['start', 'w', '--shiny=false']).flag('no-shiny'), true);
    assert.throws(() => parsed(['start', 'w', '--shiny=maybe']), /--shiny takes true or false, not "maybe"/);
    assert.throws(() => parsed(['start', 'w', '--wait=false']), /--wait takes no value/);
  });

  it('reads an alias under the flag it spells, remembering how it was written', () => {
    const inv = parsed(['status', '--json']);
    assert.equal(inv.string('output'), 'json');
    assert.equal(inv.spelled('output'), '--json');
    assert.equal(outputFormat(inv), 'json');
    assert.equal(outputFormat(parsed(['status'])), 'table');
    assert.equal(outputFormat(parsed(['status', '-o', 'yaml'])), 'yaml');
  });

  it('lets a verb give a flag another meaning, deprecated, and says so once', () => {
    const start = parsed(['start', 'w', '--timeout', '10m']);
    assert.equal(start.string('drain-timeout'), '10m');
    assert.equal(start.string('timeout'), undefined);
    assert.equal(start.spelled('drain-timeout'), '--timeout');
    assert.deepEqual(start.warnings, ['--timeout is deprecated on start: write --drain-timeout']);
    // elsewhere --timeout is itself
    const stop = parsed(['stop', '--timeout', '10m']);
    assert.equal(stop.string('timeout'), '10m');
    assert.deepEqual(stop.warnings, []);
  });

  it('refuses two spellings of one flag', () => {
    assert.throws(
      () => parsed(['start', 'w', '--timeout', '1m', '--drain-timeout', '2m']),
      /--timeout and --drain-timeout say the same thing: give one/,
    );
    assert.throws(() => parsed(['status', '--json', '-o', 'yaml']), /say the same thing/);
  });

  it("refuses a value outside a flag's choices, naming the spelling used", () => {
    assert.throws(
      () => parsed(['status', '-o', 'xml']),
      /--output must be table, wide, name, json or yaml, not "xml"/,
    );
  });

  it('refuses a flag of another verb, and arguments a verb does not take', () => {
    assert.throws(() => parsed(['status', '--size', '3']), /--size: not a flag of status/);
    assert.throws(() => parsed(['start']), /start needs a NAME/);
    assert.throws(() => parsed(['start', 'a', 'b']), /start takes one NAME, got "a b"/);
    assert.throws(() => parsed(['status', 'x']), /status takes no arguments, got "x"/);
  });

  it('refuses an unknown verb or flag, suggesting the closest', () => {
    assert.throws(() => parsed(['strat', 'w']), /unknown verb "strat"; did you mean "start"\?/);
    assert.throws(() => parsed(['stauts']), /unknown verb "stauts"; did you mean "status"\?/);
    assert.throws(
      () => parsed(['frobnicate']),
      (err: Error) => err.message === 'unknown verb "frobnicate"',
    );
    assert.throws(() => parsed(['start', 'w', '--sise', '3']), /unknown flag --sise; did you mean --size\?/);
    assert.throws(() => parsed(['start', 'w', '-x']), /unknown flag -x/);
  });

  it('answers --help (exit 0), for one verb when one is named, and no verb with help (exit 2)', () => {
    const whole = parseCommandLine(widgets(), ['--help']);
    assert.ok('help' in whole);
    assert.equal(whole.code, 0);
    assert.match(whole.help, /^Usage: nodewarden widget <start\|status\|stop> \[flags\]/);
    const one = parseCommandLine(widgets(), ['start', '-h']);
    assert.ok('help' in one);
    assert.match(one.help, /^Usage: nodewarden widget start NAME \[flags\]\n\nStart a widget\.\n/);
    const none = parseCommandLine(widgets(), []);
    assert.ok('help' in none);
    assert.equal(none.code, 2);
  });
});

describe('helpOf', () => {
  const help = helpOf(widgets());

  it('lists every verb with its synopsis and summary, and the common flags first', () => {
    assert.match(help, /^ {2}start NAME +start a widget$/m);
    assert.match(help, /^Flags:\n {2}--kubeconfig PATH +kubeconfig$/m);
    assert.match(help, /Exit status: 0 done\.$/);
  });

  it("lists each verb's flags under it, hiding deprecated spellings", () => {
    assert.match(help, /^start:\n {2}--size N +how big$/m);
    assert.match(help, /^ {2}--no-shiny +leave it dull$/m);
    const start = help.slice(help.indexOf('start:'), help.indexOf('status:'));
    assert.doesNotMatch(start, /--timeout/);
    assert.match(help, /^status:\n {2}-o, --output FORMAT +table \(default\), wide \(more columns\), name/m);
    assert.match(help, /^ {2}--json +the same as -o json$/m);
  });

  it("one verb's help shows its flags and the common ones", () => {
    const one = helpOf(widgets(), 'stop');
    assert.match(one, /^ {2}--timeout DURATION +how long to wait$/m);
    assert.match(one, /^ {2}--kubeconfig PATH/m);
    assert.doesNotMatch(one, /--size/);
  });
});

describe('dispatch', () => {
  it('runs the verb with the parsed invocation and prints deprecation warnings on stderr', async () => {
    const seen: Invocation[] = [];
    const { io, streams } = capture();
    assert.equal(await dispatch(widgets(seen), ['start', 'w', '--timeout', '5m'], streams), 0);
    assert.equal(seen[0]?.string('drain-timeout'), '5m');
    assert.equal(
      io.err,
      'nodewarden widget: warning: --timeout is deprecated on start: write --drain-timeout\n',
    );
  });

  it('exits 2 on a usage mistake with a pointer to --help, running nothing', async () => {
    const seen: Invocation[] = [];
    const { io, streams } = capture();
    assert.equal(await dispatch(widgets(seen), ['stat'], streams), 2);
    assert.equal(
      io.err,
      'nodewarden widget: unknown verb "stat"; did you mean "start"?\nRun "nodewarden widget --help" for usage.\n',
    );
    assert.equal(seen.length, 0);
  });

  it('prints help on stdout: exit 0 when asked, 2 when no verb is given', async () => {
    const { io, streams } = capture();
    assert.equal(await dispatch(widgets(), ['--help'], streams), 0);
    assert.match(io.out, /^Usage: nodewarden widget/);
    assert.equal(await dispatch(widgets(), [], streams), 2);
  });
});

describe('closest', () => {
  it('forgives a letter or a swap, and a third of a longer word, but not a different word', () => {
    assert.equal(closest('stat', ['start', 'status', 'stop']), 'start');
    assert.equal(closest('lsit', ['list', 'start']), 'list');
    assert.equal(closest('resme', ['pause', 'resume']), 'resume');
    assert.equal(closest('frobnicate', ['start', 'status']), undefined);
    assert.equal(closest('x', ['start']), undefined);
  });

  it('takes a clear prefix', () => {
    assert.equal(closest('stat', ['status', 'list']), 'status');
  });
});

describe('writeDocument', () => {
  const doc = { apiVersion: 'v1', kind: 'List', items: [{ metadata: { name: 'a' } }] };

  it('writes indented JSON, or one object per line when streaming', () => {
    const { io, streams } = capture();
    writeDocument(streams, 'json', doc);
    assert.deepEqual(JSON.parse(io.out), doc);
    assert.ok(io.out.includes('\n  "kind"'));
    io.out = '';
    writeDocument(streams, 'json', doc, true);
    writeDocument(streams, 'json', doc, true);
    assert.deepEqual(
      io.out
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l)),
      [doc, doc],
    );
  });

  it('writes YAML, each streamed document after ---', () => {
    const { io, streams } = capture();
    writeDocument(streams, 'yaml', doc);
    assert.deepEqual(parse(io.out), doc);
    io.out = '';
    writeDocument(streams, 'yaml', doc, true);
    writeDocument(streams, 'yaml', { kind: 'Other' }, true);
    assert.match(io.out, /^---\napiVersion: v1\n/);
    assert.equal(io.out.split(/^---$/m).length, 3);
  });
});
