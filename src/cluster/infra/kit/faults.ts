// Fault injection every simulator's API shares: fail the next calls, throttle
// the next calls or a share of them, slow every call down. A simulator keeps
// these fields in its own fault record (beside faults only it knows, such as
// the cloud's never-joining instances) and composes these functions, and the
// route guard that applies them. The randomness comes from the simulator's seeded
// generator, so a run repeats exactly.
import { type Guard, reply } from './routes.ts';

export interface ApiFaults {
  /** The next N API calls fail with a retryable server error (503). */
  failNextCalls: number;
  /** The next N API calls are throttled (429). */
  throttleNextCalls: number;
  /** Chance (0..1) that any API call is throttled. */
  throttleProbability: number;
  /** Milliseconds every API call waits before it is answered. */
  slowCallsMs: number;
}

export type ApiFaultsPatch = Partial<ApiFaults>;

/** The names of the API faults, for a simulator's list of the faults it knows. */
export const API_FAULT_KEYS: readonly (keyof ApiFaults)[] = [
  'failNextCalls',
  'throttleNextCalls',
  'throttleProbability',
  'slowCallsMs',
];

/**
 * Refuses a patch naming a fault the simulator does not know (a misspelt
 * key would otherwise be dropped, and the test it was meant for pass without
 * its fault). RangeError naming the known ones.
 */
export function checkFaultKeys(patch: object, known: readonly string[]): void {
  const unknown = Object.keys(patch).filter((k) => !known.includes(k));
  if (unknown.length)
    throw new RangeError(
      `unknown fault${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `"${k}"`).join(', ')}; ` +
        `the faults are ${known.join(', ')}`,
    );
}

export type ApiFault = { status: 429 | 503; message: string };

export function noApiFaults(): ApiFaults {
  return { failNextCalls: 0, throttleNextCalls: 0, throttleProbability: 0, slowCallsMs: 0 };
}

/** A chance from 0 to 1; RangeError otherwise. */
export function probability(v: unknown, what: string): number {
  if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new RangeError(`${what} must be 0..1`);
  return v;
}

/** A whole number >= 0; RangeError otherwise. */
export function count(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new RangeError(`${what} must be a whole number >= 0`);
  }
  return v;
}

/** A copy of `f` with the API fields of `patch` checked and set. Throws RangeError on bad values. */
export function mergeApiFaults<F extends ApiFaults>(f: F, patch: ApiFaultsPatch): F {
  const next = { ...f };
  if (patch.throttleProbability !== undefined) {
    next.throttleProbability = probability(patch.throttleProbability, 'throttleProbability');
  }
  if (patch.failNextCalls !== undefined) next.failNextCalls = count(patch.failNextCalls, 'failNextCalls');
  if (patch.throttleNextCalls !== undefined) {
    next.throttleNextCalls = count(patch.throttleNextCalls, 'throttleNextCalls');
  }
  if (patch.slowCallsMs !== undefined) next.slowCallsMs = count(patch.slowCallsMs, 'slowCallsMs');
  return next;
}

/**
 * The error the next API call should fail with, if any; consumes the counted
 * faults in order: throttling first, then errors, then the throttling chance
 * (drawn only when set, so a run without it draws nothing).
 */
export function takeApiFault(f: ApiFaults, random: () => number): ApiFault | undefined {
  if (f.throttleNextCalls > 0) {
    f.throttleNextCalls--;
    return { status: 429, message: 'rate exceeded (injected)' };
  }
  if (f.failNextCalls > 0) {
    f.failNextCalls--;
    return { status: 503, message: 'service unavailable (injected)' };
  }
  if (f.throttleProbability > 0 && random() < f.throttleProbability) {
    return { status: 429, message: 'rate exceeded (injected)' };
  }
  return undefined;
}

/** The API faults in force, as phrases for a status line. */
export function describeApiFaults(f: ApiFaults): string[] {
  const parts: string[] = [];
  if (f.failNextCalls) parts.push(`next ${f.failNextCalls} calls fail (503)`);
  if (f.throttleNextCalls) parts.push(`next ${f.throttleNextCalls} calls throttled (429)`);
  if (f.throttleProbability) parts.push(`calls throttled with p=${f.throttleProbability}`);
  if (f.slowCallsMs) parts.push(`calls ${f.slowCallsMs}ms slower`);
  return parts;
}

/** A simulator state's hold on its API faults (consumed once per call). */
export interface ApiFaultSource {
  callDelayMs(): number;
  nextApiFault(): ApiFault | undefined;
}

/** The RouteTable guard that applies them: waits the slow-call delay, then fails the call if one is due. */
export function apiFaultGuard(source: ApiFaultSource): Guard {
  return async () => {
    const delay = source.callDelayMs();
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const fault = source.nextApiFault();
    return fault && reply(fault.status, { error: fault.message }, { 'retry-after': '1' });
  };
}
