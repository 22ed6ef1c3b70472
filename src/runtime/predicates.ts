// Filters on update events, as controller-runtime's predicates: a controller
// that only acts on spec changes should not wake for every status write.
import type { K8sObject } from './resources.ts';

/** Decides whether an update (old → new) should enqueue. Adds and deletes always enqueue. */
export type UpdatePredicate = (oldObj: K8sObject, newObj: K8sObject) => boolean;

/** metadata.generation moved: the spec changed (status writes do not bump it). */
export const generationChanged: UpdatePredicate = (o, n) => o.metadata?.generation !== n.metadata?.generation;

export const labelsChanged: UpdatePredicate = (o, n) => !sameMap(o.metadata?.labels, n.metadata?.labels);

export const annotationsChanged: UpdatePredicate = (o, n) =>
  !sameMap(o.metadata?.annotations, n.metadata?.annotations);

/** Deletion started or finalizers changed: cleanup must run even without a spec change. */
export const deletionOrFinalizersChanged: UpdatePredicate = (o, n) =>
  o.metadata?.deletionTimestamp !== n.metadata?.deletionTimestamp ||
  (o.metadata?.finalizers ?? []).join(',') !== (n.metadata?.finalizers ?? []).join(',');

export const resourceVersionChanged: UpdatePredicate = (o, n) =>
  o.metadata?.resourceVersion !== n.metadata?.resourceVersion;

export const anyOf =
  (...ps: UpdatePredicate[]): UpdatePredicate =>
  (o, n) =>
    ps.some((p) => p(o, n));

export const allOf =
  (...ps: UpdatePredicate[]): UpdatePredicate =>
  (o, n) =>
    ps.every((p) => p(o, n));

function sameMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => a?.[k] === b?.[k]);
}
