// config/samples/: one example object per CRD the suite ships, named the
// kubebuilder way, listed in the kustomization, and valid against the CRD as
// shipped in config/crd/bases/ (which must itself be structural). CEL rules
// are the real API server's to judge: test/integration/samples.test.ts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import type { AnyCustomResource, JSONSchemaProps } from '../../src/api/index.ts';
import { customResources } from '../../src/capabilities.ts';
import { isOwnGroup } from '../../src/manifests/generate.ts';
import { schemaViolations } from './api/schema-values.ts';
import { structuralProblems } from './api/structural.ts';

const SAMPLES = new URL('../../config/samples/', import.meta.url);
const BASES = new URL('../../config/crd/bases/', import.meta.url);
const ECOSYSTEM = new URL('../../config/crd/ecosystem/', import.meta.url);

/** kubebuilder's sample file name: <group's first label>_<version>_<kind lower-cased>.yaml */
const sampleFile = (cr: AnyCustomResource) =>
  `${cr.type.group.split('.')[0]}_${cr.type.version}_${cr.type.kind.toLowerCase()}.yaml`;

interface Sample {
  file: string;
  object: { apiVersion?: string; kind?: string; metadata?: { name?: string }; spec?: unknown };
}

function samples(): Sample[] {
  return readdirSync(SAMPLES)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((file) =>
      parseAllDocuments(readFileSync(new URL(file, SAMPLES), 'utf8')).map((doc) => {
        assert.deepEqual(doc.errors, [], `${file} is not valid YAML`);
        return { file, object: doc.toJS() as Sample['object'] };
      }),
    );
}

/** The schema of the CRD as shipped (what `make install` applies), not as generated in memory. */
function shippedSchema(cr: AnyCustomResource): JSONSchemaProps {
  // Another project's kind (metal3's BareMetalHost) ships apart from our own.
  const folder = isOwnGroup(cr.type.group) ? BASES : ECOSYSTEM;
  const crd = parse(readFileSync(new URL(`${cr.type.group}_${cr.type.plural}.yaml`, folder), 'utf8')) as {
    spec: { versions: { name: string; schema: { openAPIV3Schema: JSONSchemaProps } }[] };
  };
  const version = crd.spec.versions.find((v) => v.name === cr.type.version);
  assert.ok(version, `config/crd/bases has no ${cr.type.version} of ${cr.name}`);
  return version.schema.openAPIV3Schema;
}

describe('config/samples', () => {
  const all = samples();

  for (const cr of customResources) {
    describe(cr.type.kind, () => {
      const mine = all.filter((s) => s.object.apiVersion === cr.apiVersion && s.object.kind === cr.type.kind);

      it(`has exactly one sample, in ${sampleFile(cr)}`, () => {
        assert.equal(mine.length, 1, `samples of ${cr.type.kind}: ${mine.map((s) => s.file).join(', ')}`);
        assert.equal(mine[0]?.file, sampleFile(cr));
      });

      it('is valid against the shipped CRD schema, which is structural', () => {
        const schema = shippedSchema(cr);
        assert.deepEqual(structuralProblems(schema, cr.type.kind), []);
        const sample = mine[0]!.object;
        assert.ok(sample.metadata?.name, 'the sample is named');
        assert.deepEqual(schemaViolations(sample, schema), []);
      });

      it('is valid for the TypeBox schema the CLI and webhook check with', () => {
        const checked = cr.validate(mine[0]!.object);
        assert.ok(checked.ok, checked.ok ? '' : checked.errors.join('; '));
      });
    });
  }

  it('holds nothing but samples of shipped kinds, every one listed in kustomization.yaml', () => {
    const kinds = new Set(customResources.map((cr) => `${cr.apiVersion}/${cr.type.kind}`));
    const strays = all.filter((s) => !kinds.has(`${s.object.apiVersion}/${s.object.kind}`));
    assert.deepEqual(
      strays.map((s) => s.file),
      [],
    );
    const kustomization = parse(readFileSync(new URL('kustomization.yaml', SAMPLES), 'utf8')) as {
      resources?: string[];
    };
    assert.deepEqual(
      [...(kustomization.resources ?? [])].sort(),
      [...new Set(all.map((s) => s.file))].sort(),
    );
  });
});

describe('the sample checker finds what the API server would refuse or drop', () => {
  const schema: JSONSchemaProps = {
    type: 'object',
    required: ['spec'],
    properties: {
      metadata: { type: 'object' },
      spec: {
        type: 'object',
        required: ['nodeName'],
        properties: {
          nodeName: { type: 'string', minLength: 1 },
          timeout: { type: 'string', pattern: '^(0|([0-9]+(\\.[0-9]+)?(s|m|h))+)$' },
          grace: { type: 'integer', minimum: -1 },
          effect: { type: 'string', enum: ['NoSchedule', 'NoExecute'] },
          when: { type: 'string', format: 'date-time' },
          args: { type: 'object', additionalProperties: { type: 'string' } },
          taints: {
            type: 'array',
            maxItems: 1,
            items: { type: 'object', properties: { key: { type: 'string' } } },
          },
        },
      },
    },
  };
  const check = (spec: Record<string, unknown>) =>
    schemaViolations(
      { metadata: { name: 'x', labels: { a: 'b' } }, spec: { nodeName: 'n', ...spec } },
      schema,
    );

  it('accepts a good object, metadata included', () => {
    assert.deepEqual(
      check({ timeout: '1h30m', grace: -1, args: { v: '2' }, when: '2030-01-01T00:00:00Z' }),
      [],
    );
  });

  it('names each field the server would refuse', () => {
    assert.deepEqual(check({ timeout: '10', grace: -2, effect: 'Never', when: 'tomorrow', args: { v: 2 } }), [
      'spec.timeout: "10" does not match ^(0|([0-9]+(\\.[0-9]+)?(s|m|h))+)$',
      'spec.grace: below -1',
      'spec.effect: "Never" is not one of ["NoSchedule","NoExecute"]',
      'spec.when: "tomorrow" is not an RFC 3339 date-time',
      'spec.args.v: integer, not string',
    ]);
    assert.deepEqual(schemaViolations({ spec: {} }, schema), ['spec.nodeName: required']);
  });

  it('names fields the server would silently drop, and arrays too long', () => {
    assert.deepEqual(check({ timout: '10m', taints: [{ key: 'a', efect: 'x' }, { key: 'b' }] }), [
      'spec.timout: not in the schema (the server would drop it)',
      'spec.taints: more than 1 items',
      'spec.taints[0].efect: not in the schema (the server would drop it)',
    ]);
  });
});
