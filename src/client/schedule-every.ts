/**
 * The interval every Schedule we make takes (rotation, drift checks, auto top-ups, the parent key): `90s`, `15m`,
 * `12h`, `30d`. The domain's ROTATION_INTERVAL_PATTERN (src/domain/plans.ts) is the same rule; a unit test keeps the
 * two equal.
 */
export const SCHEDULE_EVERY = /^\d+(s|m|h|d)$/;
