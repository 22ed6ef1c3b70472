// The delays a simulator's console and `cluster up` flags take (a boot delay):
// short Go-style durations with milliseconds, read and shown one way.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** A boot delay such as "5s", "500ms", "1m30s" or "0", in milliseconds. */
export function parseBootDelay(text: string): number {
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m)/g)];
  const whole = text === '0' || (parts.length > 0 && parts.map((p) => p[0]).join('') === text);
  if (!whole) throw new Error(`boot delay "${text}" is not a duration like 5s, 500ms or 1m`);
  return Math.round(parts.reduce((ms, p) => ms + Number(p[1]) * (UNIT_MS[p[2] ?? 's'] ?? 1000), 0));
}

/** Milliseconds as the console shows them: "5s", "1500ms". */
export function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
