// Owner references, so the garbage collector removes what a controller made
// when its owner goes. Like the finalizer helpers, these return copies and
// never mutate their arguments.
import type { KubernetesObject, V1OwnerReference } from '@kubernetes/client-node';

/** The object already has a controller other than the one being set. */
export class AlreadyOwnedError extends Error {
  readonly existing: V1OwnerReference;
  constructor(message: string, existing: V1OwnerReference) {
    super(message);
    this.name = 'AlreadyOwnedError';
    this.existing = existing;
  }
}

function describeObject(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? '?'}/${ns ? `${ns}/` : ''}${obj.metadata?.name ?? '?'}`;
}

function group(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

// Same object for the API: group, kind and name. The version may differ, and a
// recreated owner (new uid) still counts as the same one, as in controller-runtime.
function sameObject(a: V1OwnerReference, b: V1OwnerReference): boolean {
  return group(a.apiVersion) === group(b.apiVersion) && a.kind === b.kind && a.name === b.name;
}

export function ownerReference(
  owner: KubernetesObject,
  opts: { controller?: boolean; blockOwnerDeletion?: boolean } = {},
): V1OwnerReference {
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  // Without these the API server rejects the reference; the owner was not read from the API.
  if (!apiVersion || !kind) throw new Error(`owner ${describeObject(owner)} has no apiVersion or kind`);
  if (!name) throw new Error(`owner of kind ${kind} has no metadata.name`);
  if (!uid) throw new Error(`owner ${describeObject(owner)} has no metadata.uid; read it from the API first`);
  const ref: V1OwnerReference = { apiVersion, kind, name, uid };
  if (opts.controller !== undefined) ref.controller = opts.controller;
  if (opts.blockOwnerDeletion !== undefined) ref.blockOwnerDeletion = opts.blockOwnerDeletion;
  return ref;
}

/** The owner reference marked controller: true, if any. */
export function controllerOf(obj: KubernetesObject): V1OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/** Whether obj lists owner among its owners (by uid when the owner has one). */
export function isOwnedBy(obj: KubernetesObject, owner: KubernetesObject): boolean {
  const refs = obj.metadata?.ownerReferences ?? [];
  const uid = owner.metadata?.uid;
  if (uid) return refs.some((r) => r.uid === uid);
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  if (!apiVersion || !kind || !name) return false;
  return refs.some((r) => sameObject(r, { apiVersion, kind, name, uid: '' }));
}

/**
 * Returns a copy of `owned` with `owner` as its controller (controller: true,
 * blockOwnerDeletion: true), replacing any reference to the same owner in place.
 * Throws AlreadyOwnedError if another object is already the controller, and
 * Error for a namespace mismatch the garbage collector would not honour.
 */
export function setControllerReference<T extends KubernetesObject>(owned: T, owner: KubernetesObject): T {
  const ref = ownerReference(owner, { controller: true, blockOwnerDeletion: true });
  const ownerNs = owner.metadata?.namespace;
  if (ownerNs) {
    const ownedNs = owned.metadata?.namespace;
    if (!ownedNs) {
      throw new Error(
        `cluster-scoped ${describeObject(owned)} cannot have namespaced owner ${describeObject(owner)}`,
      );
    }
    if (ownedNs !== ownerNs) {
      throw new Error(
        `cross-namespace owner references are not allowed: ${describeObject(owned)} -> ${describeObject(owner)}`,
      );
    }
  }
  const current = controllerOf(owned);
  if (current && !sameObject(current, ref)) {
    throw new AlreadyOwnedError(
      `${describeObject(owned)} is already controlled by ${current.kind}/${current.name}; ` +
        `refusing to make ${describeObject(owner)} its controller`,
      current,
    );
  }
  // Update in place rather than re-append, so an unchanged reference makes no diff.
  const refs = owned.metadata?.ownerReferences ?? [];
  const i = refs.findIndex((r) => sameObject(r, ref));
  const ownerReferences = i < 0 ? [...refs, ref] : refs.map((r, j) => (j === i ? ref : r));
  return { ...owned, metadata: { ...owned.metadata, ownerReferences } };
}
