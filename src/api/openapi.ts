// Converts a TypeBox schema (plain JSON Schema underneath) into the
// *structural* OpenAPI v3 subset the Kubernetes API server accepts for CRDs.
// Anything we cannot express faithfully throws, naming the field: silently
// dropping a constraint would make the server accept what our types forbid.
import type { TSchema } from 'typebox';

/** A CEL rule, as written in x-kubernetes-validations. */
export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
  fieldPath?: string;
  /** Transition rules only: also evaluate when the old value is absent. */
  optionalOldSelf?: boolean;
}

/**
 * JSONSchemaProps with its wire names. client-node's V1JSONSchemaProps uses
 * in-memory names (`_default`, `x_kubernetes_validations`), so it cannot type
 * the JSON/YAML we write.
 */
export interface JSONSchemaProps {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  title?: string;
  format?: string;
  default?: unknown;
  enum?: unknown[];
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  anyOf?: JSONSchemaProps[];
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
}

/** Options object adding CEL rules to a field: `Type.String({ ...cel(immutable()) })`. */
export function cel(...rules: CelRule[]): { 'x-kubernetes-validations': CelRule[] } {
  return { 'x-kubernetes-validations': rules };
}

/**
 * A transition rule forbidding changes once set. On an optional field it
 * does not stop the field from being added or removed (the server skips
 * transition rules when there is no old value); make the field required, or
 * add a parent rule such as `has(self.x) == has(oldSelf.x)`.
 */
export function immutable(message = 'is immutable'): CelRule {
  return { rule: 'self == oldSelf', message };
}

// Annotations copied through unchanged when present.
const PASSTHROUGH = [
  'description',
  'title',
  'format',
  'default',
  'minimum',
  'maximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'nullable',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
] as const;

// Keys we consume while working out the node's shape.
const STRUCTURE = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'items',
  'anyOf',
  'const',
  'enum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'uniqueItems',
]);

// Meaningless to the API server (or rejected by it), and safe to leave out:
// pruning already removes unknown fields, so additionalProperties:false is moot.
const DROPPED = new Set(['$id', '$schema', 'examples', 'readOnly', 'writeOnly']);

type Json = Record<string, unknown>;
const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);

/** Converts one TypeBox schema node; `path` names the field in errors. */
export function toStructural(schema: TSchema | Json, path = '<root>'): JSONSchemaProps {
  const s = schema as Json;
  const fail = (why: string): never => {
    throw new Error(`${path}: ${why}`);
  };
  for (const key of Object.keys(s)) {
    if (key === 'prefixItems' || key === 'additionalItems') fail('tuples are not structural; use an object');
    if (!STRUCTURE.has(key) && !DROPPED.has(key) && !(PASSTHROUGH as readonly string[]).includes(key)) {
      fail(`keyword "${key}" has no structural-schema equivalent`);
    }
  }
  const out: JSONSchemaProps = { ...shape(s, path, fail) };
  const extra = out as Json;
  for (const key of PASSTHROUGH) if (s[key] !== undefined) extra[key] = s[key];
  // JSON Schema 2020 exclusive bounds are numbers; OpenAPI v3.0's are flags.
  if (typeof s.exclusiveMinimum === 'number') {
    out.minimum = s.exclusiveMinimum;
    out.exclusiveMinimum = true;
  }
  if (typeof s.exclusiveMaximum === 'number') {
    out.maximum = s.exclusiveMaximum;
    out.exclusiveMaximum = true;
  }
  return order(out);
}

function shape(s: Json, path: string, fail: (why: string) => never): JSONSchemaProps {
  if (Array.isArray(s.anyOf)) return fromUnion(s.anyOf as Json[], path, fail);
  if ('const' in s) return { type: scalarType([s.const], fail), enum: [s.const] };
  if (Array.isArray(s.enum)) return { type: scalarType(s.enum, fail), enum: [...s.enum] };
  const type = s.type;
  if (type === undefined) {
    // Unknown/Any, or an Unsafe node that declares int-or-string itself.
    if (s['x-kubernetes-int-or-string'] === true) return {};
    return { 'x-kubernetes-preserve-unknown-fields': true };
  }
  if (type === 'object') return fromObject(s, path, fail);
  if (type === 'array') return fromArray(s, path, fail);
  if (typeof type === 'string' && SCALARS.has(type)) return { type: type as JSONSchemaProps['type'] };
  return fail(
    `type ${JSON.stringify(type)} is not supported (null alone, tuples and the like are not structural)`,
  );
}

function fromObject(s: Json, path: string, fail: (why: string) => never): JSONSchemaProps {
  const out: JSONSchemaProps = { type: 'object' };
  const props = s.properties as Record<string, Json> | undefined;
  const patterns = s.patternProperties as Record<string, Json> | undefined;
  const additional = s.additionalProperties;
  const hasProps = props !== undefined && Object.keys(props).length > 0;
  if (hasProps) {
    out.properties = {};
    for (const name of Object.keys(props).sort()) {
      out.properties[name] = toStructural(props[name] as Json, join(path, name));
    }
    const required = (s.required as string[] | undefined) ?? [];
    if (required.length > 0) out.required = [...required].sort();
  }
  // A map: Type.Record gives patternProperties; the server wants additionalProperties.
  let value: Json | undefined;
  if (patterns !== undefined) {
    const keys = Object.keys(patterns);
    if (keys.length !== 1) fail('a map must have exactly one key pattern');
    value = patterns[keys[0]!];
  } else if (typeof additional === 'object' && additional !== null) {
    value = additional as Json;
  } else if (additional === true) {
    out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  if (value !== undefined) {
    // k8s#94593: properties and additionalProperties are mutually exclusive.
    if (hasProps) fail('an object cannot have both fixed properties and map values');
    out.additionalProperties = toStructural(value, `${path}[*]`);
  }
  return out;
}

function fromArray(s: Json, path: string, fail: (why: string) => never): JSONSchemaProps {
  if (typeof s.items !== 'object' || s.items === null || Array.isArray(s.items)) {
    fail('an array needs one items schema (tuples are not structural)');
  }
  const items = toStructural(s.items as Json, `${path}[*]`);
  const out: JSONSchemaProps = { type: 'array', items };
  if (s.uniqueItems === true) {
    // The server forbids uniqueItems (quadratic); a set list type is its equivalent.
    if (!items.type || !SCALARS.has(items.type))
      fail('uniqueItems needs scalar items (it becomes a set list)');
    out['x-kubernetes-list-type'] = 'set';
  }
  return out;
}

function fromUnion(members: Json[], path: string, fail: (why: string) => never): JSONSchemaProps {
  const nonNull = members.filter((m) => m.type !== 'null');
  const nullable = nonNull.length < members.length;
  if (nonNull.length === 0) fail('a union of only null is not supported');
  let out: JSONSchemaProps;
  if (nonNull.every((m) => 'const' in m)) {
    // Union of Literals: the server's enum.
    const values = nonNull.map((m) => m.const);
    out = { type: scalarType(values, fail), enum: values };
  } else if (nonNull.length === 1) {
    out = toStructural(nonNull[0]!, path);
  } else if (
    nonNull.length === 2 &&
    new Set(nonNull.map((m) => m.type)).size === 2 &&
    isIntOrString(nonNull)
  ) {
    out = { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] };
  } else {
    return fail('unions must be of literals, T | null, or integer | string');
  }
  return nullable ? { ...out, nullable: true } : out;
}

function isIntOrString(members: Json[]): boolean {
  // Only bare types: constraints inside anyOf are not allowed to carry types.
  return members.every((m) => (m.type === 'integer' || m.type === 'string') && Object.keys(m).length === 1);
}

function scalarType(values: unknown[], fail: (why: string) => never): JSONSchemaProps['type'] {
  const types = new Set(values.map((v) => (Number.isInteger(v) ? 'integer' : typeof v)));
  if (types.size === 1) {
    const [t] = types;
    if (t === 'string' || t === 'integer' || t === 'number' || t === 'boolean') return t;
  }
  if ([...types].every((t) => t === 'integer' || t === 'number')) return 'number';
  return fail(`enum values must share one scalar type, got ${[...types].join(', ')}`);
}

function join(path: string, name: string): string {
  return path === '<root>' ? name : `${path}.${name}`;
}

// A stable key order so generated YAML reads the same way every time.
const KEY_ORDER = ['description', 'type', 'format', 'title', 'nullable', 'default', 'enum'];
function order(s: JSONSchemaProps): JSONSchemaProps {
  const entries = Object.entries(s).filter(([, v]) => v !== undefined);
  const rank = (k: string) => {
    const i = KEY_ORDER.indexOf(k);
    return i === -1 ? KEY_ORDER.length : i;
  };
  entries.sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries) as JSONSchemaProps;
}
