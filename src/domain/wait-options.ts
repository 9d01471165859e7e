import { z } from 'zod';
import { durationSchema } from './duration-schema.js';

/**
 * The options every waiting workflow takes for how its waits are bounded (workflows/waits.ts):
 * advanced knobs, left at their defaults by users; tests set them to drive thousands of polls
 * through several continuations in seconds.
 */
export const waitBoundOptions = {
  /** A poll backs off to this interval at most (default 5m, never below the poll interval). */
  pollCeiling: durationSchema.optional(),
  /** Past this many history events a waiting run continues as new (default 10,000; Temporal's limit is 51,200). */
  historyEventBound: z.number().int().min(200).max(40_000).optional(),
};

/**
 * What a run that continued as new hands to the next: the workflow's own state, written and read only
 * by that workflow (never a secret: ids, fingerprints, stages, timestamps, decisions). Not for callers.
 */
export const continuedSchema = z.record(z.string(), z.unknown()).optional();
