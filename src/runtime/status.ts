// Status writes that cost nothing when nothing changed: a steady fleet of a
// thousand objects should issue no writes at all. Every status writer goes
// through updateStatusIfChanged, so every one compares the same way — as the
// API server would store the values: key order never matters (the server
// may hand keys back in another order), fields set to undefined are absent,
// and fields the caller names (a lastUpdate stamp) are left out.
import { isDeepStrictEqual } from 'node:util';
import type { KubeClient } from './client.ts';
import { isConflict } from './errors.ts';
import type { Result } from './reconcile.ts';
import type { K8sObject, ResourceType } from './resources.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A value as it travels as JSON: undefined fields dropped, dates as strings. */
function asJson(value: unknown): Json | undefined {
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as Json);
}

const isObject = (v: Json | undefined): v is { [key: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function without(value: Json | undefined, ignore: readonly string[]): Json {
  if (!isObject(value)) return value ?? {};
  const out = { ...value };
  for (const key of ignore) delete out[key];
  return out;
}

/**
 * Whether two statuses hold the same values: deep equality that key order
 * cannot fool, undefined fields counting as absent, and the named top-level
 * fields ignored. An absent status equals an empty one.
 */
export function statusEqual(a: unknown, b: unknown, ignore: readonly string[] = []): boolean {
  return isDeepStrictEqual(without(asJson(a), ignore), without(asJson(b), ignore));
}

/** RFC 7386: what the server stores after applying `patch` to `target`. */
function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: { [key: string]: Json } = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

export interface StatusUpdateOptions {
  /** Top-level status fields the comparison leaves out (e.g. a lastUpdate stamp written with every change). */
  ignore?: readonly string[];
  /**
   * 'update' (default) replaces the whole status (PUT of the status subresource,
   * with the object's resourceVersion, so a stale write conflicts). 'merge'
   * sends only the given fields as a merge patch — for fields this controller
   * alone writes, which must land even when the object changed since it was read.
   */
  write?: 'update' | 'merge';
}

/** What came of a status write. A conflict means a newer version is on its way through the cache. */
export type StatusUpdate = 'unchanged' | 'written' | 'conflict';

/**
 * Writes `status` to `obj` unless it already holds the same values (see
 * statusEqual). A conflict is reported, not thrown; every other error is
 * thrown (NotFound included: whether a vanished object is done is the caller's to say).
 */
export async function updateStatusIfChanged<S extends object>(
  client: Pick<KubeClient, 'updateStatus' | 'patch'>,
  type: ResourceType,
  obj: K8sObject & { status?: S },
  status: S,
  opts: StatusUpdateOptions = {},
): Promise<StatusUpdate> {
  const { ignore = [], write = 'update' } = opts;
  const current = asJson(obj.status);
  const next = write === 'merge' ? mergePatch(current, asJson(status) ?? {}) : status;
  if (statusEqual(next, current, ignore)) return 'unchanged';
  try {
    if (write === 'merge') {
      await client.patch(
        type,
        obj.metadata?.name ?? '',
        obj.metadata?.namespace,
        { status },
        { type: 'merge', subresource: 'status' },
      );
    } else {
      await client.updateStatus(type, { ...obj, status });
    }
  } catch (err) {
    if (isConflict(err)) return 'conflict';
    throw err;
  }
  return 'written';
}

/** How soon a reconcile whose status write met a conflict looks again: a newer version is on its way through the cache. */
export const CONFLICT_REQUEUE_MS = 100;

/**
 * The one way a reconcile ends by saving its status: writes it if it changed
 * (updateStatusIfChanged) and answers `result`, or a short requeue on a conflict.
 */
export async function saveStatus<S extends object>(
  client: Pick<KubeClient, 'updateStatus' | 'patch'>,
  type: ResourceType,
  obj: K8sObject & { status?: S },
  status: S,
  result: Result,
  opts: StatusUpdateOptions = {},
): Promise<Result> {
  const written = await updateStatusIfChanged(client, type, obj, status, opts);
  return written === 'conflict' ? { requeueAfterMs: CONFLICT_REQUEUE_MS } : result;
}
