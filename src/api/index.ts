// The custom resources the suite ships. `nodewarden manifests` generates a CRD
// for each entry, into config/crd/bases/ and the Helm chart's crds/.
import type { TSchema } from 'typebox';
import type { CustomResourceDefinition } from './crd.ts';
import { NodeMaintenances } from './maintenance.ts';
import { AutoscalingStrategies, NodeVersions, PendingNodes, ScalingGroups } from './upgrade.ts';

export type AnyCustomResource = CustomResourceDefinition<TSchema, TSchema | undefined>;

export const customResources: readonly AnyCustomResource[] = [
  NodeMaintenances as unknown as AnyCustomResource,
  NodeVersions as unknown as AnyCustomResource,
  ScalingGroups as unknown as AnyCustomResource,
  PendingNodes as unknown as AnyCustomResource,
  AutoscalingStrategies as unknown as AnyCustomResource,
];

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
