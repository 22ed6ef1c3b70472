// Checks a value (a sample, a fixture) against a CRD's structural schema the
// way the API server reads it: types, required fields, enums, patterns,
// bounds, and fields the schema does not know (the server would silently
// prune those, so a sample carrying one would teach something false).
// Written from the schema alone, independently of the TypeBox validator.
// CEL rules are left to the real API server (test/integration/samples.test.ts).
import type { JSONSchemaProps } from '../../../src/api/index.ts';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Every way `value` at `path` breaks `schema`; empty when the server would accept it as written. */
export function schemaViolations(value: unknown, schema: JSONSchemaProps, path = ''): string[] {
  const at = path || '<root>';
  const problems: string[] = [];
  if (value === null) return schema.nullable ? [] : [`${at}: null`];
  if (schema['x-kubernetes-int-or-string']) {
    const t = typeOf(value);
    return t === 'integer' || t === 'string' ? [] : [`${at}: ${t}, not an int or a string`];
  }
  const actual = typeOf(value);
  const wanted = schema.type;
  if (wanted && !(actual === wanted || (wanted === 'number' && actual === 'integer')))
    return [`${at}: ${actual}, not ${wanted}`];

  if (schema.enum && !schema.enum.some((e) => e === value))
    problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);

  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength)
      problems.push(`${at}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      problems.push(`${at}: longer than ${schema.maxLength}`);
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value))
      problems.push(`${at}: "${value}" does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && !RFC3339.test(value))
      problems.push(`${at}: "${value}" is not an RFC 3339 date-time`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum)
      problems.push(`${at}: below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum)
      problems.push(`${at}: above ${schema.maximum}`);
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      problems.push(`${at}: more than ${schema.maxItems} items`);
    if (schema.minItems !== undefined && value.length < schema.minItems)
      problems.push(`${at}: fewer than ${schema.minItems} items`);
    value.forEach((item, i) => {
      if (schema.items) problems.push(...schemaViolations(item, schema.items, `${path}[${i}]`));
    });
  }
  if (actual === 'object') {
    const obj = value as Record<string, unknown>;
    for (const key of schema.required ?? [])
      if (!(key in obj)) problems.push(`${path ? `${path}.` : ''}${key}: required`);
    const open = schema['x-kubernetes-preserve-unknown-fields'] === true;
    for (const [key, v] of Object.entries(obj)) {
      const child = `${path ? `${path}.` : ''}${key}`;
      const known = schema.properties?.[key];
      if (known) problems.push(...schemaViolations(v, known, child));
      else if (schema.additionalProperties)
        problems.push(...schemaViolations(v, schema.additionalProperties, child));
      // metadata is the API server's own business: an empty object schema there prunes nothing.
      else if (!open && path !== 'metadata')
        problems.push(`${child}: not in the schema (the server would drop it)`);
    }
  }
  return problems;
}
