/**
 * Durations in workflow inputs: `500ms`, `30s`, `5m`, `2h`, `1d` (the forms Temporal's own timers
 * accept) or whole milliseconds. No zod here: workflows import this (their bundle stays small).
 */
export const DURATION_PATTERN = /^(\d+)(ms|s|m|h|d)$/;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function msOf(value: string | number): number {
  if (typeof value === 'number') return value;
  const match = DURATION_PATTERN.exec(value);
  if (!match) throw new Error(`not a duration: ${value}`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/**
 * The longest duration an input may give: a wait becomes a Temporal timer (or an activity timeout), which holds
 * about 292 years (a Go time.Duration) and no more; a longer one fails the run where it is used, long after the
 * start was accepted. A hundred years is far beyond any wait that means something.
 */
export const MAX_DURATION = '36500d';
export const MAX_DURATION_MS = 36_500 * UNIT_MS.d;
export const DURATION_RANGE_RULE = `at most ${MAX_DURATION} (100 years; a Temporal timer holds no longer)`;

/** A duration's range (its form checked elsewhere): null when it fits in a timer, else the rule. */
export function durationRangeProblem(value: string | number): string | null {
  if (typeof value === 'string' && !DURATION_PATTERN.test(value)) return null;
  return msOf(value) <= MAX_DURATION_MS ? null : `must be ${DURATION_RANGE_RULE}`;
}

const MAX_CLOSE_DELAY = '365d';
export const CLOSE_DELAY_RULE = `0 (close at once) or a duration like 12h or 30d, at most ${MAX_CLOSE_DELAY}`;

/** A close's delay in milliseconds: `0` (at once) or a duration (never throws for `0`, which is no duration). */
export function closeDelayMs(value: string): number {
  return value === '0' ? 0 : msOf(value);
}

/**
 * The one rule of a close's minimum delay, applied by the starters (startLifecycle) and by closeTenant's own
 * input check: `after` no shorter than the minimum (CLOSE_DELAY, or a plan's longer closeDelay, named by
 * `from`), unless an admin closes sooner. The problem names the field.
 */
export function closeDelayMinimumProblem(after: string, minimum: string, from?: string): string | null {
  if (closeDelayMs(after) >= closeDelayMs(minimum)) return null;
  return (
    `after: must be at least ${minimum} (${from ?? 'CLOSE_DELAY, the server'}'s minimum, ` +
    'which only an admin may undercut)'
  );
}

/** A close's delay: `0` or a duration of at most 365 days. Shared by the config, the inputs and the workflow. */
export function closeDelayProblem(value: unknown): string | null {
  if (value === '0' || value === 0) return null;
  if (typeof value !== 'string' || !DURATION_PATTERN.test(value)) return `must be ${CLOSE_DELAY_RULE}`;
  return msOf(value) > msOf(MAX_CLOSE_DELAY) ? `must be ${CLOSE_DELAY_RULE}` : null;
}
