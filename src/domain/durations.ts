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

const MAX_CLOSE_DELAY = '365d';
export const CLOSE_DELAY_RULE = `0 (close at once) or a duration like 12h or 30d, at most ${MAX_CLOSE_DELAY}`;

/** A close's delay: `0` or a duration of at most 365 days. Shared by the config, the inputs and the workflow. */
export function closeDelayProblem(value: unknown): string | null {
  if (value === '0' || value === 0) return null;
  if (typeof value !== 'string' || !DURATION_PATTERN.test(value)) return `must be ${CLOSE_DELAY_RULE}`;
  return msOf(value) > msOf(MAX_CLOSE_DELAY) ? `must be ${CLOSE_DELAY_RULE}` : null;
}
