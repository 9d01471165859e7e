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
