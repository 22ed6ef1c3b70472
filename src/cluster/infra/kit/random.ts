// A simulator's randomness: seeded, so a run with the same seed repeats
// exactly, and resumable, so a restarted simulator goes on where it stopped
// (its position is saved in its snapshot).

/** mulberry32: a tiny deterministic PRNG; its whole position is one 32-bit number, easy to save. */
export class Mulberry32 {
  position: number;

  constructor(seed: number) {
    this.position = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.position = (this.position + 0x6d2b79f5) >>> 0;
    let t = this.position;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

export function seededRandom(seed: number): () => number {
  const g = new Mulberry32(seed);
  return () => g.next();
}

/**
 * A seed from a name (FNV-1a), so two clusters' simulators draw different
 * sequences (and names) while each one repeats itself.
 */
export function seedFromName(name: string): number {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
  return h >>> 0;
}
