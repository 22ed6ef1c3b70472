// Values of upgrade.nodewarden.dev that its schema states and the commands need
// too, kept apart from the schema (src/api/upgrade.ts) so that a command checking
// its flags or showing a rollout does not load TypeBox: the budgets' formats and
// the strategy's defaults. The schema takes them from here.

/** The percentages each budget accepts: a surge above 0%, an unavailability up to 100%. */
export const SURGE_PERCENT = '^[1-9][0-9]*%$';
export const UNAVAILABLE_PERCENT = '^(100|[1-9]?[0-9])%$';

/** The rollout strategy's defaults, field by field (the schema's `default`s). */
export const STRATEGY_DEFAULTS = {
  maxSurge: 1,
  maxUnavailable: 1,
  controlPlaneFirst: true,
  drainTimeout: '30m',
  nodeReadyTimeout: '15m',
  paused: false,
} as const;
