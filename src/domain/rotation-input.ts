import { z } from 'zod';
import { durationSchema, externalRefSchema, slotSchema } from './tenant-input.js';
import { freeText, pathSegmentId } from './text.js';
import { continuedSchema, waitBoundOptions } from './wait-options.js';

/**
 * Inputs of the rotation workflows, validated at the start by the same schemas whichever way they
 * come in (CLI, schedule, Web UI, fleet). Workflows take the types only and validate through the validateWorkflowInput
 * local activity.
 */
const duration = durationSchema;

export const deployerSpecSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('notify') }),
  z.strictObject({
    kind: z.literal('project-env'),
    /** One project; without it, every project of the tenant that already defines the variable. */
    projectId: pathSegmentId(200).optional(),
    variable: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, 'must be an environment variable name')
      .optional(),
  }),
]);
export type DeployerSpec = z.infer<typeof deployerSpecSchema>;

export const rotationTimingsSchema = z.strictObject({
  /** The old key must show no use for this long before it is revoked. */
  quietPeriod: duration.optional(),
  /** Consumers may still use the old key this long after deploy; a use after that means one never switched. */
  propagationAllowance: duration.optional(),
  /** How often key records are read while waiting for quiet. */
  pollInterval: duration.optional(),
  /** From deploy: how long to wait for quiet before holding for an operator. */
  quietDeadline: duration.optional(),
  /** Where the platform shows no last-use information: wait this long after deploy, then revoke. */
  overlapWindow: duration.optional(),
  /** At the active-key limit: retry the create this often when no operator signal comes. */
  keyLimitRetryInterval: duration.optional(),
  /** How the waits (key limit, quiet gate, held) are bounded: poll ceiling and history bound (workflows/waits.ts). */
  ...waitBoundOptions,
});
export type RotationTimings = z.infer<typeof rotationTimingsSchema>;

export const rotateTenantKeyInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  slot: slotSchema.default('default'),
  /** After a leak: quiet period zero, the old key is revoked right after the new one is deployed. */
  emergency: z.boolean().default(false),
  /** Default: the worker's configured deployer (ROTATION_DEPLOYER). */
  deployer: deployerSpecSchema.optional(),
  reason: freeText({ min: 0, max: 500, multiline: true }).optional(),
  options: rotationTimingsSchema.optional(),
  /** Set by the run itself when it continues as new (its carried state); not for callers. */
  continued: continuedSchema,
});
export type RotateTenantKeyInput = z.input<typeof rotateTenantKeyInputSchema>;
export type ParsedRotateTenantKeyInput = z.output<typeof rotateTenantKeyInputSchema>;

export const rotateFleetInputSchema = z.strictObject({
  slot: slotSchema.default('default'),
  /**
   * Rotations working at once; one held, at its key limit or waiting out its quiet gate no longer counts.
   * The platform's rate limit (the shared request budget) paces the calls beneath.
   */
  concurrency: z.number().int().min(1).max(1000).default(50),
  /** Tenants read per page; the run continues as new after each page to keep its history small. */
  pageSize: z.number().int().min(1).max(2000).default(500),
  deployer: deployerSpecSchema.optional(),
  options: rotationTimingsSchema.optional(),
  /** Adoption instead of rotation: every active tenant with unmanaged keys in the slot (adoptTenantKeys). */
  adopt: z.boolean().optional(),
  /** Carried across continue-as-new: resume after this external ref, with these totals. */
  after: z.string().nullable().default(null),
  totals: z
    .strictObject({
      started: z.number().int(),
      completed: z.number().int(),
      held: z.number().int(),
      skipped: z.number().int(),
      failed: z.number().int(),
      /** Rotations released while they wait out their quiet gate, not settled yet. */
      waiting: z.number().int().optional(),
    })
    .optional(),
});
export type RotateFleetInput = z.input<typeof rotateFleetInputSchema>;
