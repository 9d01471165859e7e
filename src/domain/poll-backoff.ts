/**
 * The interval before poll number `polls` (counted from 1) of a backing-off poll: `baseMs` for `steady` polls,
 * then half as long again each poll up to `ceilingMs` (never below `baseMs`). One formula for the workflows'
 * timers (workflows/waits.ts `Backoff`) and for the quiet gate's watch, whose looks are an activity's retries
 * (activities/keys/watch-key-usage.ts). Pure: workflow-safe.
 */
export function backoffDelayMs(baseMs: number, ceilingMs: number, polls: number, steady = 10): number {
  const grown = baseMs * Math.pow(1.5, Math.max(0, polls - steady));
  return Math.round(Math.max(baseMs, Math.min(grown, Math.max(baseMs, ceilingMs))));
}
