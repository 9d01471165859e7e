import { z } from 'zod';
import { DURATION_PATTERN } from './durations.js';

/**
 * A duration in an input: `500ms`, `30s`, `5m`, `2h`, `1d` or whole milliseconds. Its own module so that
 * tenant-input.ts and wait-options.ts can both use it (tenant-input's schemas take the wait options).
 */
export const durationSchema = z.union([
  z.string().regex(DURATION_PATTERN, 'must be a duration like 500ms, 30s, 5m, 2h, 1d'),
  z.number().int().nonnegative(),
]);
