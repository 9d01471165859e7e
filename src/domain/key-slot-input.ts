import { z } from 'zod';
import { continuedSchema, waitBoundOptions } from './wait-options.js';
import { OPERATOR_MAX, OPERATOR_RULE, REASON_TEXT } from './operator-decisions.js';
import { freeText } from './text.js';
import { durationSchema, externalRefSchema, slotSchema } from './tenant-input.js';

/**
 * Inputs of the key-slot workflows (issueTenantKey, revokeTenantKeySlot) and of `/platform/api-keys` work: one schema
 * per input, used by the helper, the CLI, the gateway and the workflows' own validation.
 */
export const SLOT_RULE = '1-32 characters of a-z 0-9 - starting with a letter or digit';

/** A slot named by a user: required here (no silent `default` for an explicit per-slot action). */
export const namedSlotSchema = z
  .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .pipe(slotSchema);

const operatorSchema = z
  .string()
  .trim()
  .regex(new RegExp(`^[A-Za-z0-9._@:-]{1,${OPERATOR_MAX}}$`), `must be ${OPERATOR_RULE}`);
const reasonSchema = freeText(REASON_TEXT);

export const issueTenantKeyInputSchema = z.strictObject({
  externalRef: externalRefSchema,
  slot: namedSlotSchema,
  /** Who asked (audited); the signup backend or an operator. */
  operator: operatorSchema.optional(),
  options: z
    .strictObject({
      /** At the active-key limit: retry the create this often when no operator decision comes. */
      keyLimitRetryInterval: durationSchema.optional(),
      ...waitBoundOptions,
    })
    .optional(),
  continued: continuedSchema,
});
export type IssueTenantKeyInput = z.input<typeof issueTenantKeyInputSchema>;

export const revokeTenantKeyInputSchema = z
  .strictObject({
    externalRef: externalRefSchema,
    slot: namedSlotSchema,
    /** Skip the quiet gate (the key may be in use): needs operator and reason. */
    force: z.boolean().default(false),
    operator: operatorSchema.optional(),
    reason: reasonSchema.optional(),
    options: z
      .strictObject({
        /** The key must show no new use for this long before it is revoked. */
        quietPeriod: durationSchema.optional(),
        /** How often the platform's key records are read while waiting. */
        pollInterval: durationSchema.optional(),
        /** Still in use after this long: the revoke is refused (the key stays active). */
        quietDeadline: durationSchema.optional(),
        /** Where the platform shows no last-use information: wait this long, then revoke. */
        overlapWindow: durationSchema.optional(),
        ...waitBoundOptions,
      })
      .optional(),
    continued: continuedSchema,
  })
  .superRefine((input, ctx) => {
    if (!input.force) return;
    if (input.operator === undefined)
      ctx.addIssue({ code: 'custom', path: ['operator'], message: 'is required with force (who skips the gate)' });
    if (input.reason === undefined)
      ctx.addIssue({ code: 'custom', path: ['reason'], message: 'is required with force (why the gate is skipped)' });
  });
export type RevokeTenantKeyInput = z.input<typeof revokeTenantKeyInputSchema>;

export const rotateParentKeyInputSchema = z.strictObject({
  /** After a leak: no quiet gate, the old key is revoked as soon as every process uses the new one. */
  emergency: z.boolean().default(false),
  operator: operatorSchema.optional(),
  reason: reasonSchema.optional(),
  options: z
    .strictObject({
      /** How often process heartbeats and the platform's key list are read while waiting. */
      pollInterval: durationSchema.optional(),
      /** A process that has not reported for this long is not waited for. */
      staleAfter: durationSchema.optional(),
      /** Processes still on the old key after this long: the run is held for an operator. */
      switchDeadline: durationSchema.optional(),
      /** The old key must show no new use for this long before it is revoked. */
      quietPeriod: durationSchema.optional(),
      /** From the switch: how long to wait for quiet before holding for an operator. */
      quietDeadline: durationSchema.optional(),
      /** Where the platform shows no last-use information: wait this long after the switch, then revoke. */
      overlapWindow: durationSchema.optional(),
      ...waitBoundOptions,
    })
    .optional(),
  continued: continuedSchema,
});
export type RotateParentKeyInput = z.input<typeof rotateParentKeyInputSchema>;
