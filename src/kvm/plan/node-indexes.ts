// Node indexes: each node id of a cluster holds a small integer for its whole
// life (it names the VM's etcd volume and iSCSI initiator, so it must not move
// when other nodes come and go). A new node takes the lowest free integer ≥ 1;
// holes left by removed nodes are reused, but only from the next pass on, as
// the anchor does (nodeindexstatus): a volume freed now may still be in use by
// a VM that is shutting down.

/** The lowest integer ≥ 1 not in `used`. */
export function allocateIndex(used: Iterable<number>): number {
  const taken = new Set(used);
  let i = 1;
  while (taken.has(i)) i++;
  return i;
}

/**
 * The indexes for `ids` (in order: masters first) given the current ones:
 * kept where they exist, dropped for ids that are gone, the lowest free for new ones.
 */
export function nodeIndexes(
  current: Readonly<Record<string, number>>,
  ids: readonly string[],
): Record<string, number> {
  const wanted = new Set(ids);
  const next: Record<string, number> = {};
  // Freed this pass: still blocked until the next one.
  const used: number[] = Object.values(current);
  for (const id of ids) {
    const i = current[id];
    if (i !== undefined) next[id] = i;
  }
  for (const id of ids) {
    if (next[id] !== undefined) continue;
    const i = allocateIndex(used);
    next[id] = i;
    used.push(i);
  }
  for (const id of Object.keys(current)) if (!wanted.has(id)) delete next[id];
  return next;
}

/** Equal maps whatever their key order (the API server's JSON need not keep ours). */
export function sameIndexes(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/**
 * The status patch that writes `next` over `current`: a merge patch keeps keys
 * it does not name, so ids that are gone are written as null.
 */
export function indexesPatch(
  current: Readonly<Record<string, number>>,
  next: Readonly<Record<string, number>>,
): { nodeIndexes: Record<string, number | null> } {
  const dropped = Object.fromEntries(
    Object.keys(current)
      .filter((k) => !(k in next))
      .map((k) => [k, null]),
  );
  return { nodeIndexes: { ...dropped, ...next } };
}
