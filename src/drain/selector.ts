// spec.podSelector, parsed once for everyone who reads it: the drain filters
// match pods with it, and the webhook and the controller refuse a selector
// that does not parse, all through parsePodSelector, so what admission lets
// in is exactly what the drain can use. Stricter than the runtime's parser: the
// keys and values must be ones the API server would accept in a label.
import { parseSelector, type Requirement } from '../runtime/label-selector.ts';

// A label name, and a label value (which may also be empty), as apimachinery's validation has them.
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const EXAMPLE = 'e.g. "app=web", "tier in (a,b)", "!canary"';

/** Why `key` is not a label key ("prefix/name" or "name"), or undefined when it is one. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `key "${key}": the prefix before "/" must be a lowercase DNS subdomain of at most 253 characters`;
  if (name.length === 0 || name.length > 63 || !NAME.test(name))
    return `key "${key}": the name must be 1 to 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
  return undefined;
}

/** Why `value` is not a label value, or undefined when it is one. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63 || !NAME.test(value))
    return `value "${value}": must be at most 63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit`;
  return undefined;
}

export type PodSelectorResult =
  | { ok: true; selector: Requirement[] | undefined }
  | { ok: false; message: string };

/**
 * Parses spec.podSelector; undefined or blank selects every pod. A refusal says
 * what is wrong and how a selector is written.
 */
export function parsePodSelector(text: string | undefined): PodSelectorResult {
  if (text === undefined || text.trim() === '') return { ok: true, selector: undefined };
  const refuse = (why: string): PodSelectorResult => ({
    ok: false,
    message: `podSelector "${text}" is not a label selector: ${why}; write it as kubectl -l takes it, ${EXAMPLE}`,
  });
  let reqs: Requirement[];
  try {
    reqs = parseSelector(text);
  } catch (err) {
    // The runtime's parser names the selector again; keep only its reason.
    return refuse((err as Error).message.replace(/^invalid label selector ".*": /s, ''));
  }
  for (const r of reqs) {
    const keyProblem = labelKeyProblem(r.key);
    if (keyProblem) return refuse(keyProblem);
    if ((r.op === 'in' || r.op === 'notin') && r.values.every((v) => v === ''))
      return refuse(`"${r.key} ${r.op} (…)" needs at least one value`);
    for (const v of r.values) {
      const valueProblem = labelValueProblem(v);
      if (valueProblem) return refuse(valueProblem);
    }
  }
  return { ok: true, selector: reqs };
}
