import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Type from 'typebox';
import { cel, defineCustomResource, immutable, toStructural } from '../../../src/api/index.ts';

describe('toStructural', () => {
  it('drops keywords the API server does not know and keeps those it does', () => {
    const s = toStructural(Type.String({ $id: 'Name', title: 'Name', format: 'hostname', minLength: 2 }));
    assert.deepEqual(s, { type: 'string', format: 'hostname', title: 'Name', minLength: 2 });
  });

  it('rewrites JSON Schema exclusive bounds into OpenAPI v3.0 flags', () => {
    const s = toStructural(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }));
    assert.deepEqual(s, {
      type: 'number',
      exclusiveMaximum: true,
      exclusiveMinimum: true,
      maximum: 1,
      minimum: 0,
    });
  });

  it('turns uniqueItems on scalars into a set list, since the server forbids uniqueItems', () => {
    const s = toStructural(Type.Array(Type.String(), { uniqueItems: true }));
    assert.deepEqual(s, { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' });
  });

  it('omits additionalProperties:false, which pruning makes redundant', () => {
    const s = toStructural(Type.Object({ a: Type.String() }, { additionalProperties: false }));
    assert.deepEqual(s, { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] });
  });

  it('maps Type.Enum and a lone literal to typed enums', () => {
    assert.deepEqual(toStructural(Type.Enum([1, 2, 3])), { type: 'integer', enum: [1, 2, 3] });
    assert.deepEqual(toStructural(Type.Literal(true)), { type: 'boolean', enum: [true] });
  });

  it('adds CEL rules given through schema options', () => {
    const s = toStructural(
      Type.Integer({ ...cel(immutable(), { rule: 'self % 2 == 0', message: 'must be even' }) }),
    );
    assert.deepEqual(s['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'is immutable' },
      { rule: 'self % 2 == 0', message: 'must be even' },
    ]);
  });

  it('refuses what a structural schema cannot say, naming the field', () => {
    const cases: Array<[unknown, RegExp]> = [
      [Type.Object({ t: Type.Tuple([Type.String(), Type.Integer()]) }), /^t: tuples are not structural/],
      [Type.Object({ u: Type.Union([Type.String(), Type.Boolean()]) }), /^u: unions must be of/],
      [Type.Object({ i: Type.Intersect([Type.Object({}), Type.Object({})]) }), /^i: keyword "allOf"/],
      [Type.Object({ r: Type.Ref('Other') }), /^r: keyword "\$ref"/],
      [Type.Object({ m: Type.Union([Type.Literal('a'), Type.Literal(1)]) }), /^m: enum values must share/],
    ];
    for (const [schema, message] of cases) {
      assert.throws(() => toStructural(schema as never), { message });
    }
  });
});

describe('defineCustomResource: names', () => {
  const base = {
    group: 'x.example.dev',
    version: 'v1',
    kind: 'Thing',
    plural: 'things',
    scope: 'Cluster',
  } as const;

  it('rejects a group without a dot, a malformed version and an upper-case plural', () => {
    const spec = Type.Object({});
    assert.throws(() => defineCustomResource({ ...base, group: 'example', spec }), /group "example"/);
    assert.throws(() => defineCustomResource({ ...base, version: '1.0', spec }), /version "1.0"/);
    assert.throws(() => defineCustomResource({ ...base, plural: 'Things', spec }), /name "Things"/);
  });

  it('makes a cluster-scoped resource without status subresource when no status is given', () => {
    const crd = defineCustomResource({ ...base, spec: Type.Object({}) }).crd();
    assert.equal(crd.spec.scope, 'Cluster');
    assert.equal(crd.spec.versions[0]?.subresources, undefined);
    assert.equal(crd.spec.versions[0]?.schema.openAPIV3Schema.properties?.status, undefined);
  });

  it('rejects a spec that is not an object', () => {
    const bad = defineCustomResource({ ...base, spec: Type.String() });
    assert.throws(() => bad.crd(), /spec must be an object/);
  });
});
