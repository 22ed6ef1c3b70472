// Label selectors read as the API server reads them, in their two spellings:
// the structured LabelSelector of a spec (matchLabels + matchExpressions) and
// the string of a list call or `kubectl -l` ('app=web,tier in (a,b),!canary').
// A string is parsed into requirements and read through the structured
// evaluator, so both spellings have one meaning. Capabilities that pick hosts
// or nodes by a selector in their spec (VM hosts, tenant clusters), the cache's
// reads and the drain's pod selector all share it.

export interface SelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: readonly string[];
}

export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>>;
  matchExpressions?: readonly SelectorRequirement[];
}

/** True when the selector has no terms (and so, by the API's rule, selects everything). */
export function isEmptySelector(selector: LabelSelector): boolean {
  return (
    Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0
  );
}

/** Every term must hold; an empty selector selects everything. */
export function matchesLabelSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        return has && values.includes(labels[r.key]!);
      // As upstream: a missing key satisfies != and notin.
      case 'NotIn':
        return !has || !values.includes(labels[r.key]!);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
    }
    return false;
  });
}

/** How a string selector's requirement was written: `=`/`==`, `!=`, `key`, `!key`, `in`, `notin`. */
export type SelectorOp = 'eq' | 'neq' | 'exists' | 'notexists' | 'in' | 'notin';

/** One requirement of a string selector, as written (a refusal can quote it back). */
export interface Requirement {
  key: string;
  op: SelectorOp;
  values: string[];
}

/** What each written form means as a structured requirement: `a=b` is `a in (b)`, `a!=b` is `a notin (b)`. */
const OPERATOR_OF: Readonly<Record<SelectorOp, SelectorRequirement['operator']>> = {
  eq: 'In',
  in: 'In',
  neq: 'NotIn',
  notin: 'NotIn',
  exists: 'Exists',
  notexists: 'DoesNotExist',
};

const KEY = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$/;

/** Parses a label selector string: 'a=b', 'a==b', 'a!=b', 'a', '!a', 'a in (x,y)', 'a notin (x,y)'. */
export function parseSelector(selector: string): Requirement[] {
  const parts = splitOutsideParentheses(selector);
  const reqs: Requirement[] = [];
  for (const raw of parts) {
    const p = raw.trim();
    if (p === '') {
      if (parts.length > 1) throw new Error(`invalid label selector "${selector}": empty requirement`);
      continue;
    }
    const req = parseRequirement(p);
    if (!KEY.test(req.key)) throw new Error(`invalid label selector "${selector}": bad key "${req.key}"`);
    reqs.push(req);
  }
  return reqs;
}

/** The selector's requirements: split at the commas that are not inside a value list. */
function splitOutsideParentheses(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts;
}

function parseRequirement(p: string): Requirement {
  const set = p.match(/^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/);
  if (set)
    return { key: set[1]!, op: set[2] as 'in' | 'notin', values: set[3]!.split(',').map((v) => v.trim()) };
  const eq = p.match(/^([^=!\s]+)\s*(==|=|!=)\s*([^=!\s]*)$/);
  if (eq) return { key: eq[1]!, op: eq[2] === '!=' ? 'neq' : 'eq', values: [eq[3]!] };
  const not = p.match(/^!\s*(\S+)$/);
  if (not) return { key: not[1]!, op: 'notexists', values: [] };
  return { key: p, op: 'exists', values: [] };
}

/** A string selector (or its parsed requirements) as the structured selector it means. */
export function toLabelSelector(selector: string | readonly Requirement[]): LabelSelector {
  const reqs = typeof selector === 'string' ? parseSelector(selector) : selector;
  return {
    matchExpressions: reqs.map((r) => ({
      key: r.key,
      operator: OPERATOR_OF[r.op],
      ...(r.op === 'exists' || r.op === 'notexists' ? {} : { values: r.values }),
    })),
  };
}

/** Whether `labels` satisfy every requirement of a string selector; absent labels are an empty set. */
export function matchesSelector(
  labels: Readonly<Record<string, string>> | undefined,
  selector: string | readonly Requirement[],
): boolean {
  return matchesLabelSelector(toLabelSelector(selector), labels ?? {});
}
