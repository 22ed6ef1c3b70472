// Checks a generated schema against the API server's structural-schema rules,
// written independently of the converter so a converter bug cannot hide itself.
import type { JSONSchemaProps } from '../../../src/api/index.ts';

// Keys the API server refuses in a structural schema (or that we never mean to emit).
const FORBIDDEN = [
  '$id',
  '$schema',
  '$ref',
  'const',
  'patternProperties',
  'uniqueItems',
  'allOf',
  'oneOf',
  'not',
  'definitions',
  'dependencies',
  'additionalItems',
];

/** Every structural-schema violation under a node, written independently of the converter. */
export function structuralProblems(node: JSONSchemaProps, path: string): string[] {
  const problems: string[] = [];
  const raw = node as Record<string, unknown>;
  const exempt =
    node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
  if (!node.type && !exempt) problems.push(`${path}: no type`);
  for (const key of FORBIDDEN) if (key in raw) problems.push(`${path}: has ${key}`);
  if (node.properties && node.additionalProperties)
    problems.push(`${path}: properties and additionalProperties`);
  if (node.anyOf && node['x-kubernetes-int-or-string'] !== true)
    problems.push(`${path}: anyOf outside int-or-string`);
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    problems.push(...structuralProblems(child, `${path}.${name}`));
  }
  if (node.additionalProperties)
    problems.push(...structuralProblems(node.additionalProperties, `${path}[*]`));
  if (node.type === 'array') {
    if (!node.items) problems.push(`${path}: array without items`);
    else problems.push(...structuralProblems(node.items, `${path}[*]`));
  }
  return problems;
}
