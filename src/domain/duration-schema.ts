import { z } from 'zod';
import { DURATION_PATTERN, durationRangeProblem, DURATION_RANGE_RULE, MAX_DURATION_MS } from './durations.js';

/**
 * A duration in an input: `500ms`, `30s`, `5m`, `2h`, `1d` or whole milliseconds, at most MAX_DURATION (what a
 * Temporal timer holds). Its own module so that tenant-input.ts and wait-options.ts can both use it (tenant-input's
 * schemas take the wait options).
 */
export const durationSchema = z.union([
  z
    .string()
    .regex(DURATION_PATTERN, 'must be a duration like 500ms, 30s, 5m, 2h, 1d')
    // zod runs the refinement even when the pattern failed: durationRangeProblem passes a malformed value.
    .refine((value) => durationRangeProblem(value) === null, `must be ${DURATION_RANGE_RULE}`),
  z.number().int().nonnegative().max(MAX_DURATION_MS, `must be ${DURATION_RANGE_RULE}`),
]);
