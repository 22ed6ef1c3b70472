import { parseArgs } from 'node:util';
import type { KubeClient } from '../runtime/client.ts';
import { type CommandIO, connect, runCommand, STDIO, UsageError } from './command.ts';
import { DOCUMENT_FORMATS, OUTPUT_FORMATS, type OutputFormat } from './output.ts';

export {
  kubeList,
  kubeName,
  type ObjectView,
  type OutputFormat,
  withoutManagedFields,
  writeDocument,
  writeObjects,
} from './output.ts';

// A capability's command as a table: its flags, and its verbs each with a
// handler, a line of help and the flags it takes. dispatch() parses the command
// line against the table, prints help, refuses what does not fit (exit 2, with
// a pointer to --help and the closest verb or flag when one is near), warns of
// deprecated spellings, then runs the verb's handler through runCommand.

/** One flag of a command. */
export interface FlagSpec {
  type: 'string' | 'boolean';
  /** A one-letter spelling: -o. */
  short?: string;
  /** The value's name in --help: DURATION, NODE. */
  value?: string;
  /** For --help: one or more lines. */
  help: string;
  /** The values a string flag takes; anything else is a usage error. */
  choices?: readonly string[];
  /** Another spelling of the named flag: its value is read under that name. */
  aliasOf?: string;
  /** A boolean spelling standing for a value of aliasOf: --json is --output json. */
  means?: string;
  /** Still accepted, with this warning; left out of --help. */
  deprecated?: string;
}

/** What a verb's handler is given: the parsed command line, and a way to reach the API server. */
export interface Invocation {
  verb: string;
  /** The positional arguments after the verb. */
  args: string[];
  /** A string flag's value, by its own name (whatever alias was typed); undefined when not given. */
  string(name: string): string | undefined;
  /** Whether a boolean flag was given. */
  flag(name: string): boolean;
  /** How the user wrote a flag, for messages: "--timeout" where that spelling stood for --drain-timeout. */
  spelled(name: string): string;
  /** Deprecated spellings used, one warning each. */
  warnings: string[];
}

export interface VerbContext {
  io: CommandIO;
  /** A client from --kubeconfig and --context, closed when the verb returns. */
  connect(): KubeClient;
  /** Says a warning on stderr the way dispatch says a deprecated flag's: "nodewarden NAME: warning: …". */
  warn(line: string): void;
}

export interface VerbSpec {
  /** What follows the verb on its usage line: "NODE --reason TEXT". */
  synopsis?: string;
  /** One line for --help. */
  summary: string;
  /** The flags it takes, aliases included; any other is a usage error. */
  flags: readonly string[];
  /** Its positional arguments: their name in messages and how many (default: none). */
  args?: { name: string; min: number; max: number };
  /**
   * Flags that mean something else on this verb (a deprecated spelling kept for it,
   * say); each keeps the type it has in the command's table.
   */
  overrides?: Readonly<Record<string, FlagSpec>>;
  /** Checks that need no server (before any connection), then the work; returns the exit status. */
  run(inv: Invocation, ctx: VerbContext): Promise<number>;
}

export interface CommandTable {
  /** The subcommand: "maintenance" for `nodewarden maintenance`. */
  name: string;
  flags: Readonly<Record<string, FlagSpec>>;
  /** Flags every verb takes, shown first in --help. */
  common: readonly string[];
  verbs: Readonly<Record<string, VerbSpec>>;
  /** Closing paragraph of --help: exit statuses, notes. */
  footer?: string;
}

/** How every command that talks to a cluster reaches it, as kubectl's flags. */
export const CONNECTION_FLAGS: Readonly<Record<'kubeconfig' | 'context', FlagSpec>> = {
  kubeconfig: {
    type: 'string',
    value: 'PATH',
    help: 'kubeconfig (default: $KUBECONFIG, then ~/.kube/config)',
  },
  context: { type: 'string', value: 'NAME', help: 'kubeconfig context (default: the current one)' },
};

/** -o/--output and its --json spelling, the same in every command that prints objects. */
export const OUTPUT_FLAGS: Readonly<Record<'output' | 'json', FlagSpec>> = {
  output: {
    type: 'string',
    short: 'o',
    value: 'FORMAT',
    choices: OUTPUT_FORMATS,
    help: 'table (default), wide (more columns), name (one a line),\njson or yaml (objects without managedFields)',
  },
  json: { type: 'boolean', aliasOf: 'output', means: 'json', help: 'the same as -o json' },
};

/** -o on a verb that prints one document (settings, faults), not objects: no wide, no name. */
export const DOCUMENT_OUTPUT: FlagSpec = {
  ...OUTPUT_FLAGS.output,
  choices: DOCUMENT_FORMATS,
  help: 'table (default), json or yaml',
};

/** -o as given (checked against its choices by dispatch), table when absent. */
export function outputFormat(inv: Invocation): OutputFormat {
  return (inv.string('output') ?? 'table') as OutputFormat;
}

/** Runs `nodewarden <table.name> argv`: help, usage checks, deprecation warnings, then the verb. */
export async function dispatch(table: CommandTable, argv: string[], io: CommandIO = STDIO): Promise<number> {
  return runCommand(table.name, io, async (use) => {
    const parsed = parseCommandLine(table, argv);
    if ('help' in parsed) {
      io.out.write(`${parsed.help}\n`);
      return parsed.code;
    }
    const warn = (line: string) => io.err.write(`nodewarden ${table.name}: warning: ${line}\n`);
    for (const w of parsed.warnings) warn(w);
    const ctx: VerbContext = {
      io,
      connect: () => use(connect(parsed.string('kubeconfig'), parsed.string('context'))),
      warn,
    };
    return table.verbs[parsed.verb]!.run(parsed, ctx);
  });
}

/** The command line read against the table, or the help to print and the exit status. */
export function parseCommandLine(
  table: CommandTable,
  argv: string[],
): Invocation | { help: string; code: 0 | 2 } {
  const args = normalize(argv, table.flags);
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args,
      options: parseArgsOptions(table.flags),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [name, ...rest] = parsed.positionals;
  const { values } = parsed;
  const verb = name !== undefined ? table.verbs[name] : undefined;
  // The flags as this verb reads them (an override keeps the flag's type: parsing is done).
  const specs: Record<string, FlagSpec> = { ...table.flags, ...verb?.overrides };
  if (values.help) return { help: helpOf(table, verb ? name : undefined), code: 0 };
  if (!name) return { help: helpOf(table), code: 2 };
  if (!verb) {
    const near = closest(name, Object.keys(table.verbs));
    throw new UsageError(`unknown verb "${name}"${near ? `; did you mean "${near}"?` : ''}`);
  }

  const takes = new Set([...table.common, ...verb.flags]);
  const stray = Object.keys(values).filter((f) => !takes.has(f));
  if (stray.length) throw new UsageError(`${stray.map((f) => `--${f}`).join(', ')}: not a flag of ${name}`);
  const { min, max, name: argName } = verb.args ?? { name: 'argument', min: 0, max: 0 };
  if (rest.length < min) throw new UsageError(`${name} needs a ${argName}`);
  if (rest.length > max)
    throw new UsageError(
      max
        ? `${name} takes ${max === 1 ? `one ${argName}` : `at most ${max} ${argName}s`}, got "${rest.join(' ')}"`
        : `${name} takes no arguments, got "${rest.join(' ')}"`,
    );

  // Each flag under its own name, remembering the spelling typed.
  const byName = new Map<string, { value: string | boolean; spelled: string }>();
  const warnings: string[] = [];
  for (const [typed, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const spec = specs[typed]!;
    const own = spec.aliasOf ?? typed;
    const earlier = byName.get(own);
    if (earlier) throw new UsageError(`${earlier.spelled} and --${typed} say the same thing: give one`);
    byName.set(own, { value: spec.means ?? value, spelled: `--${typed}` });
    if (spec.deprecated)
      warnings.push(`--${typed} is deprecated${name ? ` on ${name}` : ''}: ${spec.deprecated}`);
  }
  for (const [own, { value, spelled }] of byName) {
    const choices = specs[own]?.choices;
    if (choices && !choices.includes(String(value)))
      throw new UsageError(`${spelled} must be ${oneOf(choices)}, not "${String(value)}"`);
  }
  return {
    verb: name,
    args: rest,
    string: (n) => {
      const v = byName.get(n)?.value;
      return typeof v === 'string' ? v : undefined;
    },
    flag: (n) => byName.get(n)?.value === true,
    spelled: (n) => byName.get(n)?.spelled ?? `--${n}`,
    warnings,
  };
}

const oneOf = (words: readonly string[]) =>
  words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words.at(-1)}` : (words[0] ?? '');

function parseArgsOptions(specs: Readonly<Record<string, FlagSpec>>) {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const [name, s] of Object.entries(specs))
    options[name] = { type: s.type, ...(s.short ? { short: s.short } : {}) };
  return options;
}

/**
 * What parseArgs cannot read by itself: a negative number after a string flag
 * ("--grace-period -1"), and a boolean written the Go way ("--x=false", taken
 * as --no-x where that flag exists). An unknown flag is refused here, naming
 * the closest known one.
 */
function normalize(argv: string[], specs: Readonly<Record<string, FlagSpec>>): string[] {
  const out: string[] = [];
  const known = ['help', ...Object.keys(specs)];
  const shorts = new Set(['h', ...Object.values(specs).flatMap((s) => (s.short ? [s.short] : []))]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const long = /^--([^=]+)(?:=(.*))?$/.exec(a);
    if (long) {
      const [, name = '', inline] = long;
      const spec = specs[name];
      if (!spec && name !== 'help') {
        const near = closest(name, known);
        throw new UsageError(`unknown flag --${name}${near ? `; did you mean --${near}?` : ''}`);
      }
      if (spec?.type === 'boolean' && inline !== undefined) {
        if (inline === 'true') out.push(`--${name}`);
        else if (inline === 'false' && specs[`no-${name}`]) out.push(`--no-${name}`);
        else
          throw new UsageError(
            `--${name} takes ${specs[`no-${name}`] ? 'true or false' : 'no value'}, not "${inline}"`,
          );
        continue;
      }
      // parseArgs takes "-1" for a flag of its own: glue it on as the value.
      const next = argv[i + 1];
      if (spec?.type === 'string' && inline === undefined && next !== undefined && /^-\d/.test(next)) {
        out.push(`${a}=${next}`);
        i++;
        continue;
      }
      out.push(a);
      continue;
    }
    const short = /^-([^-\d])/.exec(a);
    if (short && !shorts.has(short[1]!)) throw new UsageError(`unknown flag ${a}`);
    out.push(a);
  }
  return out;
}

/** --help for the whole command, or for one verb. */
export function helpOf(table: CommandTable, verbName?: string): string {
  const verbs = Object.entries(table.verbs);
  const left = (name: string, spec: FlagSpec) =>
    `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.value ? ` ${spec.value}` : ''}`;
  const lines = (names: readonly string[], specs: Record<string, FlagSpec>) =>
    names
      .filter((n) => specs[n] && !specs[n].deprecated)
      .map((n) => [left(n, specs[n]!), specs[n]!.help] as const);
  const block = (rows: (readonly [string, string])[], width: number) =>
    rows.map(([l, r]) => {
      const [first, ...more] = r.split('\n');
      const head =
        l.length > width ? `  ${l}\n  ${''.padEnd(width)}  ${first}` : `  ${l.padEnd(width)}  ${first}`;
      return [head, ...more.map((m) => `  ${''.padEnd(width)}  ${m}`)].join('\n');
    });

  const verb = verbName ? table.verbs[verbName] : undefined;
  if (verbName && verb) {
    const specs = { ...table.flags, ...verb.overrides };
    const rows = lines([...verb.flags, ...table.common], specs);
    const width = Math.min(28, Math.max(...rows.map(([l]) => l.length)));
    return [
      `Usage: nodewarden ${table.name} ${verbName}${verb.synopsis ? ` ${verb.synopsis}` : ''} [flags]`,
      '',
      `${verb.summary[0]!.toUpperCase()}${verb.summary.slice(1)}.`,
      '',
      'Flags:',
      ...block(rows, width),
      ...(table.footer ? ['', table.footer] : []),
    ].join('\n');
  }

  const common = lines(table.common, table.flags as Record<string, FlagSpec>);
  // Verbs taking the same flags (status and list, say) share one section.
  const perVerb: [string, (readonly [string, string])[]][] = [];
  for (const [name, v] of verbs) {
    const rows = lines(v.flags, { ...table.flags, ...v.overrides });
    const same = perVerb.find(([, r]) => JSON.stringify(r) === JSON.stringify(rows));
    if (same) same[0] = `${same[0]}, ${name}`;
    else perVerb.push([name, rows]);
  }
  const synopses = verbs.map(([name, v]) => `${name}${v.synopsis ? ` ${v.synopsis}` : ''}`);
  const all = [...common, ...perVerb.flatMap(([, rows]) => rows)];
  const width = Math.min(28, Math.max(...all.map(([l]) => l.length), ...synopses.map((s) => s.length)));
  return [
    `Usage: nodewarden ${table.name} <${verbs.map(([n]) => n).join('|')}> [flags]`,
    '',
    ...verbs.map(([, v], i) => `  ${synopses[i]!.padEnd(width)}  ${v.summary}`),
    '',
    'Flags:',
    ...block(common, width),
    ...perVerb.flatMap(([name, rows]) => (rows.length ? [`${name}:`, ...block(rows, width)] : [])),
    '',
    `Run "nodewarden ${table.name} <verb> --help" for one verb.`,
    ...(table.footer ? ['', table.footer] : []),
  ].join('\n');
}

/** The candidate nearest `word` by edit distance (a swap of two letters counting one), if near enough to be a typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  // A third of the word may be wrong, and always one letter: "stat" is "start", "frobnicate" is nothing.
  const prefix = candidates.find((c) => word.length >= 2 && c.startsWith(word));
  if (bestDistance <= Math.max(1, Math.floor(word.length / 3))) return best;
  return prefix;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  return d[a.length]![b.length]!;
}
