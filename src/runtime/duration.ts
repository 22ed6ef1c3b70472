// Go-style durations as the CRD accepts them ("90s", "10m", "1h30m", "0").
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds in a duration; 0 for "0". Throws on anything the CRD pattern would refuse. */
export function parseDuration(text: string): number {
  if (text === '0') return 0;
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text)
    throw new Error(`bad duration "${text}"`);
  return parts.reduce((ms, p) => ms + Number(p[1]) * (UNIT_MS[p[2] ?? 's'] ?? 1000), 0);
}
