// One definition per custom resource: the TypeBox schema yields the TS type
// (Static), the CRD the API server enforces (crd()), and a validator that
// checks the same shape in-process (validate()) for webhooks and tests.

import { createRequire } from 'node:module';
import Type, { type Static, type TSchema } from 'typebox';
import type { Validator } from 'typebox/compile';
import type { ObjectMeta } from '../runtime/resources.ts';
import { type CelRule, type JSONSchemaProps, toStructural } from './openapi.ts';

/**
 * The resource as the generic client sees it. Same shape as ResourceType in
 * src/runtime/resources.ts; kept local until the two are unified.
 */
export interface ResourceRef {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export interface PrinterColumn {
  name: string;
  type: 'integer' | 'number' | 'string' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  format?: string;
  /** 0 shows in `kubectl get`; higher only with `-o wide`. */
  priority?: number;
}

export interface CustomResourceOptions<Spec extends TSchema, Status extends TSchema | undefined> {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular?: string;
  shortNames?: string[];
  categories?: string[];
  scope: 'Cluster' | 'Namespaced';
  description?: string;
  spec: Spec;
  status?: Status;
  printerColumns?: PrinterColumn[];
  /** CEL rules on the whole object (`self` is the object, so `self.spec.x`). */
  validations?: CelRule[];
}

/** A custom object as plain JSON, the way the client and informers hand it over. */
export type CustomResource<Spec, Status = never> = {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
};

/** The wire CustomResourceDefinition (apiextensions.k8s.io/v1) we generate. */
export interface CustomResourceDefinitionManifest {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    scope: 'Cluster' | 'Namespaced';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: JSONSchemaProps };
      subresources?: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
    }>;
  };
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; errors: string[] };

export interface CustomResourceDefinition<Spec extends TSchema, Status extends TSchema | undefined> {
  readonly type: ResourceRef;
  /** `<group>/<version>`. */
  readonly apiVersion: string;
  /** The CRD's metadata.name: `<plural>.<group>`. */
  readonly name: string;
  readonly spec: Spec;
  readonly status: Status;
  /** The CRD as JSON, ready to serialize or send. */
  crd(): CustomResourceDefinitionManifest;
  /**
   * Checks an object's shape (types, required, enums, bounds, patterns) after
   * applying schema defaults, as the server does. CEL rules are not evaluated.
   */
  validate(obj: unknown): ValidationResult<ObjectOf<Spec, Status>>;
  /** A new object with apiVersion and kind filled in. */
  make(metadata: ObjectMeta, spec: Static<Spec>): ObjectOf<Spec, Status>;
}

/** The object type for a spec and status schema. */
export type ObjectOf<Spec extends TSchema, Status extends TSchema | undefined> = CustomResource<
  Static<Spec>,
  Status extends TSchema ? Static<Status> : never
>;

/** The TS type of a defined resource: `type Widget = ResourceOf<typeof Widgets>`. */
export type ResourceOf<D> = D extends CustomResourceDefinition<infer Sp, infer St> ? ObjectOf<Sp, St> : never;

/** The label on every CRD nodewarden generates. */
export const CRD_OWNER_LABEL = 'app.kubernetes.io/part-of';

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function defineCustomResource<Spec extends TSchema, Status extends TSchema | undefined = undefined>(
  opts: CustomResourceOptions<Spec, Status>,
): CustomResourceDefinition<Spec, Status> {
  checkNames(opts);
  const apiVersion = `${opts.group}/${opts.version}`;
  const name = `${opts.plural}.${opts.group}`;
  // The whole object, for validate(); metadata is the server's business.
  const objectSchema = Type.Object({
    apiVersion: Type.Literal(apiVersion),
    kind: Type.Literal(opts.kind),
    metadata: Type.Object({}),
    spec: opts.spec,
    ...(opts.status ? { status: Type.Optional(opts.status) } : {}),
  });
  let validator: Validator | undefined;
  const def: CustomResourceDefinition<Spec, Status> = {
    type: {
      group: opts.group,
      version: opts.version,
      kind: opts.kind,
      plural: opts.plural,
      namespaced: opts.scope === 'Namespaced',
    },
    apiVersion,
    name,
    spec: opts.spec,
    status: opts.status as Status,
    crd: () => buildCrd(opts, name),
    validate(obj) {
      const { Compile, Value } = checker();
      validator ??= Compile(objectSchema);
      const value = Value.Default(objectSchema, Value.Clone(obj));
      if (validator.Check(value)) return { ok: true, value: value as ObjectOf<Spec, Status> };
      return { ok: false, errors: describeErrors(objectSchema, validator.Errors(value)) };
    },
    make: (metadata, spec) => ({ apiVersion, kind: opts.kind, metadata, spec }) as ObjectOf<Spec, Status>,
  };
  return def;
}

/**
 * TypeBox's compiler and value tools, loaded on the first validate(): about 300
 * modules that every command listing a CRD would otherwise load and never use
 * (the CLI's status commands only need names). require() of these ES modules is
 * synchronous in Node 22.12+, so validate() stays synchronous.
 */
let tools:
  | { Compile: typeof import('typebox/compile').Compile; Value: typeof import('typebox/value').Value }
  | undefined;
function checker(): NonNullable<typeof tools> {
  if (!tools) {
    const load = createRequire(import.meta.url);
    tools = {
      Compile: (load('typebox/compile') as typeof import('typebox/compile')).Compile,
      Value: (load('typebox/value') as typeof import('typebox/value')).Value,
    };
  }
  return tools;
}

function checkNames(o: CustomResourceOptions<TSchema, TSchema | undefined>): void {
  const bad = (what: string) => {
    throw new Error(`custom resource ${o.kind}: ${what}`);
  };
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/.test(o.group)) {
    bad(`group "${o.group}" must be a DNS subdomain with at least one dot`);
  }
  if (!/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(o.version))
    bad(`version "${o.version}" is not v1, v1beta1, ...`);
  if (!/^[A-Z][A-Za-z0-9]*$/.test(o.kind)) bad('kind must be UpperCamelCase');
  for (const n of [o.plural, o.singular ?? o.kind.toLowerCase(), ...(o.shortNames ?? [])]) {
    if (!DNS_LABEL.test(n)) bad(`name "${n}" must be a lower-case DNS label`);
  }
}

function buildCrd(o: CustomResourceOptions<TSchema, TSchema | undefined>, name: string) {
  const root: JSONSchemaProps = {
    ...(o.description ? { description: o.description } : {}),
    type: 'object',
    properties: {
      apiVersion: {
        description: 'The versioned schema of this representation of an object.',
        type: 'string',
      },
      kind: { description: 'The REST resource this object represents.', type: 'string' },
      metadata: { type: 'object' },
      spec: toStructural(o.spec, 'spec'),
      ...(o.status ? { status: toStructural(o.status, 'status') } : {}),
    },
    // A root CEL rule reading self.spec would error on a spec-less object.
    required: ['spec'],
    ...(o.validations?.length ? { 'x-kubernetes-validations': o.validations } : {}),
  };
  if (root.properties?.spec?.type !== 'object')
    throw new Error(`custom resource ${o.kind}: spec must be an object`);
  const crd: CustomResourceDefinitionManifest = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    // How `make install` tells our CRDs from another project's of the same name.
    metadata: { name, labels: { [CRD_OWNER_LABEL]: 'nodewarden' } },
    spec: {
      group: o.group,
      names: {
        kind: o.kind,
        listKind: `${o.kind}List`,
        plural: o.plural,
        singular: o.singular ?? o.kind.toLowerCase(),
        ...(o.shortNames?.length ? { shortNames: [...o.shortNames] } : {}),
        ...(o.categories?.length ? { categories: [...o.categories] } : {}),
      },
      scope: o.scope,
      versions: [
        {
          name: o.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: root },
          ...(o.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: [
            ...(o.printerColumns ?? []),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
        },
      ],
    },
  };
  return crd;
}

interface TypeboxError {
  keyword: string;
  schemaPath: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

/**
 * Turns TypeBox's errors into one line per problem, with the field path the
 * way kubectl prints it (`spec.ports[0].name: ...`). A failed union of
 * literals reports the allowed values instead of one error per literal.
 */
function describeErrors(schema: TSchema, errors: readonly TypeboxError[]): string[] {
  const unions = errors.filter((e) => e.keyword === 'anyOf').map((e) => `${e.schemaPath}/anyOf/`);
  const lines: string[] = [];
  for (const e of errors) {
    if (unions.some((u) => e.schemaPath.startsWith(u))) continue;
    const at = fieldPath(e.instancePath);
    if (e.keyword === 'required') {
      for (const p of (e.params.requiredProperties as string[] | undefined) ?? []) {
        lines.push(`${at ? `${at}.` : ''}${p}: Required value`);
      }
      continue;
    }
    const node = resolve(schema, e.schemaPath) as { anyOf?: Array<{ const?: unknown }> } | undefined;
    const literals = node?.anyOf?.filter((m) => 'const' in m).map((m) => JSON.stringify(m.const));
    if (e.keyword === 'anyOf' && literals?.length) {
      lines.push(`${at}: Unsupported value: must be one of ${literals.join(', ')}`);
    } else if (e.keyword === 'const' || e.keyword === 'enum') {
      const allowed = (e.params.allowedValues as unknown[] | undefined) ?? [e.params.allowedValue];
      lines.push(
        `${at}: Unsupported value: must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`,
      );
    } else {
      lines.push(`${at || '<root>'}: ${e.message}`);
    }
  }
  return [...new Set(lines)];
}

function fieldPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    out += /^\d+$/.test(seg) ? `[${seg}]` : out ? `.${seg}` : seg;
  }
  return out;
}

function resolve(schema: unknown, schemaPath: string): unknown {
  let node = schema;
  for (const raw of schemaPath.replace(/^#\/?/, '').split('/')) {
    if (!raw) continue;
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    node = (node as Record<string, unknown> | undefined)?.[seg];
  }
  return node;
}
