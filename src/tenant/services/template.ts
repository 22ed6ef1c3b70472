// The small template language of the load balancers' haproxy.cfg, so a user
// can override the whole config from a ConfigMap without a general-purpose
// engine (and without Go's text/template, which the anchor used):
//   {{ name }}                 a value (text or number) from the scope
//   {{#each list}} … {{/each}} the body once per item; an item's fields shadow
//                              the outer scope, so nested loops see both
// A block tag alone on its line takes the whole line with it, so loops do not
// leave blank lines behind. Anything else between {{ and }} is an error with
// its line number: a bad template becomes a problem, never a broken config.

export type TemplateValue = string | number | readonly TemplateScope[];
export interface TemplateScope {
  readonly [name: string]: TemplateValue;
}

export class TemplateError extends Error {}

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'value'; name: string; line: number }
  | { kind: 'each'; list: string; line: number; body: Node[] };

const TAG = /\{\{(.*?)\}\}/gs;
const NAME = '[A-Za-z_][A-Za-z0-9_]*';
const VALUE_TAG = new RegExp(`^\\s*(${NAME})\\s*$`);
const EACH_TAG = new RegExp(`^\\s*#each\\s+(${NAME})\\s*$`);
const END_TAG = /^\s*\/each\s*$/;

/** Renders source against scope; throws TemplateError saying what is wrong and where. */
export function renderTemplate(source: string, scope: TemplateScope): string {
  return renderNodes(parseTemplate(source), [scope]);
}

/** Parses without rendering: the syntax errors alone. */
function parseTemplate(source: string): Node[] {
  const root: Node[] = [];
  const open: { node: Extract<Node, { kind: 'each' }>; parent: Node[] }[] = [];
  let into = root;
  let at = 0;
  for (const m of source.matchAll(TAG)) {
    const start = m.index;
    const end = start + m[0].length;
    const line = lineOf(source, start);
    const inner = m[1] ?? '';
    const each = EACH_TAG.exec(inner);
    const isEnd = END_TAG.test(inner);
    const value = VALUE_TAG.exec(inner);
    if (!each && !isEnd && !value) throw new TemplateError(`line ${line}: cannot read {{${inner}}}`);
    // A block tag alone on its line swallows the line (indentation and newline).
    let [textEnd, next] = [start, end];
    if (!value) {
      const lineStart = source.lastIndexOf('\n', start - 1) + 1;
      const nl = source.indexOf('\n', end);
      const lineEnd = nl === -1 ? source.length : nl + 1;
      if (
        /^[ \t]*$/.test(source.slice(lineStart, start)) &&
        /^[ \t]*\r?\n?$/.test(source.slice(end, lineEnd))
      ) {
        textEnd = Math.max(lineStart, at);
        next = lineEnd;
      }
    }
    if (textEnd > at) into.push({ kind: 'text', text: source.slice(at, textEnd) });
    at = next;
    if (each) {
      const node: Extract<Node, { kind: 'each' }> = { kind: 'each', list: each[1]!, line, body: [] };
      into.push(node);
      open.push({ node, parent: into });
      into = node.body;
    } else if (isEnd) {
      const top = open.pop();
      if (!top) throw new TemplateError(`line ${line}: {{/each}} without an {{#each}}`);
      into = top.parent;
    } else {
      into.push({ kind: 'value', name: value![1]!, line });
    }
  }
  const rest = source.slice(at);
  if (rest.includes('{{'))
    throw new TemplateError(`line ${lineOf(source, source.indexOf('{{', at))}: unclosed {{`);
  if (rest) into.push({ kind: 'text', text: rest });
  const unclosed = open.pop();
  if (unclosed)
    throw new TemplateError(`line ${unclosed.node.line}: {{#each ${unclosed.node.list}}} is never closed`);
  return root;
}

function renderNodes(nodes: Node[], scopes: TemplateScope[]): string {
  let out = '';
  for (const n of nodes) {
    if (n.kind === 'text') out += n.text;
    else if (n.kind === 'value') {
      const v = lookup(scopes, n.name, n.line);
      if (typeof v !== 'string' && typeof v !== 'number')
        throw new TemplateError(`line ${n.line}: ${n.name} is a list; use {{#each ${n.name}}}`);
      out += String(v);
    } else {
      const v = lookup(scopes, n.list, n.line);
      if (!Array.isArray(v)) throw new TemplateError(`line ${n.line}: ${n.list} is not a list`);
      for (const item of v as readonly TemplateScope[]) out += renderNodes(n.body, [item, ...scopes]);
    }
  }
  return out;
}

function lookup(scopes: TemplateScope[], name: string, line: number): TemplateValue {
  for (const s of scopes) if (Object.hasOwn(s, name)) return s[name]!;
  const known = [...new Set(scopes.flatMap((s) => Object.keys(s)))].sort().join(', ');
  throw new TemplateError(`line ${line}: unknown variable ${name} (here: ${known})`);
}

function lineOf(source: string, index: number): number {
  let n = 1;
  for (let i = 0; i < index; i++) if (source.charCodeAt(i) === 10) n++;
  return n;
}
