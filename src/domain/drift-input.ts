import { z } from 'zod';
import { durationSchema, externalRefSchema } from './tenant-input.js';

/**
 * Input of reconcileFleet, validated at the start whichever way it comes in (CLI, schedule, Web UI;
 * workflows through the validateWorkflowInput local activity, so zod stays out of their bundle).
 */
const duration = durationSchema;

export const driftTotalsSchema = z.strictObject({
  tenantsChecked: z.number().int(),
  skipped: z.number().int(),
  fixesApplied: z.number().int(),
  findingsSeen: z.number().int(),
  /** Tenants whose check failed after its retries (listed among the skipped, with the failure type). */
  failed: z.number().int(),
});
export type DriftTotals = z.infer<typeof driftTotalsSchema>;

export const reconcileFleetInputSchema = z.strictObject({
  /** One tenant only; default the whole fleet. */
  externalRef: externalRefSchema.optional(),
  /** Tenant records per page; the run continues as new after each page to keep its history small. */
  pageSize: z.number().int().min(1).max(2000).default(200),
  /** Tenants observed at once; the platform task queue's rate limit bounds the calls beneath. */
  concurrency: z.number().int().min(1).max(500).default(20),
  /** Override the worker's configured timings (DRIFT_QUIET_PERIOD, DRIFT_ROTATION_MAX_AGE). */
  options: z.strictObject({ quietPeriod: duration.optional(), rotationMaxAge: duration.optional() }).optional(),
  /** Carried across continue-as-new. */
  checkId: z
    .string()
    .regex(/^[0-9]+$/)
    .optional(),
  after: z.string().nullable().default(null),
  totals: driftTotalsSchema.optional(),
  skippedSample: z
    .array(z.strictObject({ externalRef: z.string(), reason: z.string() }))
    .max(50)
    .optional(),
  /** The fixes the check has applied so far (the first 200), carried across continue-as-new. */
  fixesSample: z
    .array(z.strictObject({ kind: z.string(), subject: z.string(), fix: z.string() }))
    .max(200)
    .optional(),
});
export type ReconcileFleetInput = z.input<typeof reconcileFleetInputSchema>;
export type ParsedReconcileFleetInput = z.output<typeof reconcileFleetInputSchema>;
