// Finalizer helpers. They never mutate their argument: objects usually come from
// an informer cache, and editing a cached object in place corrupts what every
// other reader sees. Each change returns a shallow copy with fresh metadata and
// a fresh finalizers array; when nothing changes, the same object comes back,
// so `changed` (or identity) tells the caller whether an update is needed.

import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import type { K8sObject, ResourceType } from './resources.ts';

interface WithMetadata {
  metadata?: { finalizers?: string[]; deletionTimestamp?: Date | string };
}

export interface FinalizerChange<T> {
  object: T;
  changed: boolean;
}

function check(name: string): void {
  if (!name) throw new Error('finalizer name must not be empty');
}

export function hasFinalizer(obj: WithMetadata, name: string): boolean {
  return obj.metadata?.finalizers?.includes(name) ?? false;
}

/** Appends `name` unless present. */
export function addFinalizer<T extends WithMetadata>(obj: T, name: string): FinalizerChange<T> {
  check(name);
  if (hasFinalizer(obj, name)) return { object: obj, changed: false };
  const finalizers = [...(obj.metadata?.finalizers ?? []), name];
  return { object: { ...obj, metadata: { ...obj.metadata, finalizers } }, changed: true };
}

/** Removes every occurrence of `name`. */
export function removeFinalizer<T extends WithMetadata>(obj: T, name: string): FinalizerChange<T> {
  check(name);
  if (!hasFinalizer(obj, name)) return { object: obj, changed: false };
  const finalizers = (obj.metadata?.finalizers ?? []).filter((f) => f !== name);
  return { object: { ...obj, metadata: { ...obj.metadata, finalizers } }, changed: true };
}

/** True once deletion was requested; the object lingers while finalizers remain. */
export function isBeingDeleted(obj: WithMetadata): boolean {
  return Boolean(obj.metadata?.deletionTimestamp);
}

/**
 * Writes `name` onto (add) or off (remove) the object in the API server, guarded by the
 * resourceVersion it was read at (a conflict means a newer copy is on its way). True if
 * a write was made; a remove from an object already gone is no write.
 */
export async function patchFinalizer(
  client: KubeClient,
  type: ResourceType,
  obj: K8sObject,
  name: string,
  op: 'add' | 'remove',
): Promise<boolean> {
  const { object, changed } = op === 'add' ? addFinalizer(obj, name) : removeFinalizer(obj, name);
  if (!changed) return false;
  const patch = {
    metadata: {
      resourceVersion: obj.metadata?.resourceVersion,
      finalizers: object.metadata?.finalizers ?? [],
    },
  };
  try {
    await client.patch(type, obj.metadata?.name ?? '', obj.metadata?.namespace, patch, { type: 'merge' });
  } catch (err) {
    if (op === 'remove' && isNotFound(err)) return false;
    throw err;
  }
  return true;
}
