// The API toolkit every capability defines its custom resources with. Which
// resources ship is each capability's to say (src/capabilities.ts).
import type { TSchema } from 'typebox';
import type { CustomResourceDefinition } from './crd.ts';

export type AnyCustomResource = CustomResourceDefinition<TSchema, TSchema | undefined>;

export {
  type CustomResource,
  type CustomResourceDefinition,
  type CustomResourceDefinitionManifest,
  defineCustomResource,
  type ObjectOf,
  type PrinterColumn,
  type ResourceOf,
  type ResourceRef,
  type ValidationResult,
} from './crd.ts';
export { type CelRule, cel, immutable, type JSONSchemaProps, toStructural } from './openapi.ts';
