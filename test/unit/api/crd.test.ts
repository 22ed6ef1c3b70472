import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { goodWidget, type Widget, Widgets } from '../../fixtures/widget.ts';
import { structuralProblems } from './structural.ts';

const crd = Widgets.crd();
const version = crd.spec.versions[0]!;
const root = version.schema.openAPIV3Schema;
const spec = root.properties!.spec!;

describe('defineCustomResource: the generated CRD', () => {
  it('is named <plural>.<group> with kind, list kind, singular, short names and categories', () => {
    assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    assert.equal(crd.metadata.name, 'widgets.test.nodewarden.dev');
    assert.deepEqual(crd.spec.names, {
      kind: 'Widget',
      listKind: 'WidgetList',
      plural: 'widgets',
      singular: 'widget',
      shortNames: ['wdg'],
      categories: ['nodewarden'],
    });
    assert.equal(crd.spec.scope, 'Namespaced');
  });

  it('serves and stores its one version, with a status subresource', () => {
    assert.equal(crd.spec.versions.length, 1);
    assert.equal(version.name, 'v1alpha1');
    assert.equal(version.served, true);
    assert.equal(version.storage, true);
    assert.deepEqual(version.subresources, { status: {} });
  });

  it('has a structural schema: every node typed, no properties next to additionalProperties', () => {
    assert.deepEqual(structuralProblems(root, '<root>'), []);
    assert.deepEqual(Object.keys(root.properties ?? {}).sort(), [
      'apiVersion',
      'kind',
      'metadata',
      'spec',
      'status',
    ]);
    assert.deepEqual(root.properties?.metadata, { type: 'object' });
    assert.deepEqual(root.required, ['spec']);
  });

  it('lists required spec fields and leaves optional ones out', () => {
    assert.deepEqual(spec.required, ['class', 'max', 'min', 'size']);
    assert.deepEqual(spec.properties?.ports?.items?.required, ['name', 'port']);
  });

  it('turns a union of literals into a typed enum, keeping its default', () => {
    assert.deepEqual(spec.properties?.color, {
      type: 'string',
      default: 'blue',
      enum: ['red', 'green', 'blue'],
    });
    assert.equal(spec.properties?.replicas?.default, 1);
  });

  it('keeps bounds, patterns, formats and list annotations', () => {
    assert.equal(spec.properties?.size?.minimum, 1);
    assert.equal(spec.properties?.size?.maximum, 100);
    assert.equal(spec.properties?.size?.description, 'Size in units.');
    const ports = spec.properties?.ports;
    assert.equal(ports?.maxItems, 16);
    assert.equal(ports?.['x-kubernetes-list-type'], 'map');
    assert.deepEqual(ports?.['x-kubernetes-list-map-keys'], ['name']);
    assert.equal(ports?.items?.properties?.name?.pattern, '^[a-z][a-z0-9-]*$');
    assert.equal(root.properties?.status?.properties?.observedGeneration?.format, 'int64');
  });

  it('renders a map as additionalProperties, int-or-string, T | null as nullable, unknown as preserved', () => {
    assert.deepEqual(spec.properties?.labels, {
      type: 'object',
      additionalProperties: { type: 'string', maxLength: 63 },
    });
    assert.deepEqual(spec.properties?.target, {
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-int-or-string': true,
    });
    assert.deepEqual(spec.properties?.note, { type: 'string', nullable: true });
    assert.deepEqual(spec.properties?.extra, { 'x-kubernetes-preserve-unknown-fields': true });
  });

  it('carries the field-level immutability rule and the root CEL rule', () => {
    assert.deepEqual(spec.properties?.class?.['x-kubernetes-validations'], [
      { rule: 'self == oldSelf', message: 'class is immutable' },
    ]);
    assert.deepEqual(root['x-kubernetes-validations'], [
      { rule: 'self.spec.min <= self.spec.max', message: 'spec.min must not exceed spec.max' },
    ]);
  });

  it('has the declared printer columns followed by Age', () => {
    assert.deepEqual(
      version.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath, c.priority ?? 0]),
      [
        ['Class', 'string', '.spec.class', 0],
        ['Size', 'integer', '.spec.size', 0],
        ['Phase', 'string', '.status.phase', 0],
        ['Color', 'string', '.spec.color', 1],
        ['Age', 'date', '.metadata.creationTimestamp', 0],
      ],
    );
  });

  it('describes the resource for the generic client', () => {
    assert.deepEqual(Widgets.type, {
      group: 'test.nodewarden.dev',
      version: 'v1alpha1',
      kind: 'Widget',
      plural: 'widgets',
      namespaced: true,
    });
    assert.equal(Widgets.apiVersion, 'test.nodewarden.dev/v1alpha1');
  });

  it('is the same JSON on every call, and a fresh copy each time', () => {
    const again = Widgets.crd();
    assert.deepEqual(again, crd);
    assert.notEqual(again, crd);
  });
});

describe('defineCustomResource: validate()', () => {
  it('accepts a good Widget and fills in schema defaults, as the server would', () => {
    const result = Widgets.validate(goodWidget());
    assert.ok(result.ok, result.ok ? '' : result.errors.join('; '));
    const w: Widget = result.value;
    assert.equal(w.spec.color, 'blue');
    assert.equal(w.spec.replicas, 1);
  });

  it('does not change the object it is given', () => {
    const w = goodWidget();
    Widgets.validate(w);
    assert.equal(w.spec.color, undefined);
  });

  it('names each missing required field', () => {
    const w = goodWidget() as unknown as { spec: Record<string, unknown> };
    delete w.spec.size;
    delete w.spec.class;
    const result = Widgets.validate(w);
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.errors.sort(), [
      'spec.class: Required value',
      'spec.size: Required value',
    ]);
  });

  it('names a field of the wrong type', () => {
    const result = Widgets.validate({ ...goodWidget(), spec: { ...goodWidget().spec, size: 'big' } });
    assert.deepEqual(!result.ok && result.errors, ['spec.size: must be integer']);
  });

  it('lists the allowed values when an enum value is out of range', () => {
    const result = Widgets.validate({ ...goodWidget(), spec: { ...goodWidget().spec, color: 'pink' } });
    assert.deepEqual(!result.ok && result.errors, [
      'spec.color: Unsupported value: must be one of "red", "green", "blue"',
    ]);
  });

  it('reports bounds and patterns with the list index in the path', () => {
    const ports = [
      { name: 'ok', port: 80 },
      { name: 'Bad', port: 70000 },
    ];
    const result = Widgets.validate({ ...goodWidget(), spec: { ...goodWidget().spec, ports } });
    assert.equal(result.ok, false);
    const errors = result.ok ? [] : result.errors;
    assert.ok(errors.includes('spec.ports[1].port: must be <= 65535'), errors.join('; '));
    assert.ok(
      errors.some((e) => e.startsWith('spec.ports[1].name: must match pattern')),
      errors.join('; '),
    );
  });

  it('rejects an object of another kind or API version', () => {
    const result = Widgets.validate({ ...goodWidget(), kind: 'Gadget' });
    assert.deepEqual(!result.ok && result.errors, ['kind: Unsupported value: must be one of "Widget"']);
  });
});
