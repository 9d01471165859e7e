import { z } from 'zod';
import { microUsdSchema } from './tenant-input.js';
import { requestedBySchema } from './top-up-input.js';
import { DURATION_PATTERN, msOf } from './durations.js';

const policyFields = {
  below: microUsdSchema,
  to: microUsdSchema,
  maxPerDay: microUsdSchema,
  maxPerMonth: microUsdSchema.optional(),
};

const amount = (value: string | undefined): bigint | undefined =>
  value !== undefined && /^[1-9][0-9]*$/.test(value) ? BigInt(value) : undefined;

/**
 * The limits must agree with each other, or the policy could never act as written: `below` under `to`, and a
 * month's cap no smaller than a day's (a day could never reach `maxPerDay`).
 */
function limitsAgree(
  policy: { below: string; to: string; maxPerDay: string; maxPerMonth?: string | undefined },
  ctx: z.RefinementCtx,
): void {
  const [below, to] = [amount(policy.below), amount(policy.to)];
  if (below !== undefined && to !== undefined && below >= to)
    ctx.addIssue({ code: 'custom', path: ['below'], message: 'must be less than to' });
  const [perDay, perMonth] = [amount(policy.maxPerDay), amount(policy.maxPerMonth)];
  if (perDay !== undefined && perMonth !== undefined && perMonth < perDay)
    ctx.addIssue({
      code: 'custom',
      path: ['maxPerMonth'],
      message: `must be at least maxPerDay (${policy.maxPerDay}): a month's cap below the day's cap contradicts it`,
    });
}

/**
 * Auto top-up policy of one tenant: when the wallet is below `below`, top it up to `to`; top-ups
 * of any kind (manual or auto) of the tenant stay within `maxPerDay` (UTC day) and `maxPerMonth`.
 * Amounts are micro-USD strings; zero caps are refused (a cap of zero is "no top-ups": clear the policy), and so
 * are limits that contradict each other (limitsAgree).
 */
export const fundingPolicySchema = z
  .strictObject({ ...policyFields, updatedBy: requestedBySchema.default('unknown') })
  .superRefine(limitsAgree);
/** The same policy without who sets it: what a plan holds (src/domain/plans.ts). */
export const autoTopUpPolicySchema = z.strictObject(policyFields).superRefine(limitsAgree);
export type FundingPolicyInput = z.input<typeof fundingPolicySchema>;

/** The parent's daily cap over every top-up of the fleet; null clears it. */
export const parentCapSchema = z.strictObject({
  maxPerDay: microUsdSchema.nullable(),
  updatedBy: requestedBySchema.default('unknown'),
});

const wait = z
  .union([
    z.string().regex(DURATION_PATTERN, 'must be a duration like 500ms, 30s, 5m, 2h, 1d'),
    z.number().int().positive(),
  ])
  .refine((v) => typeof v === 'number' || !DURATION_PATTERN.test(v) || msOf(v) > 0, 'must be longer than zero');

/**
 * autoTopUpSweep's input: policy tenants read a page at a time, the next page listed while the last reads of the
 * one before finish; a run continues as new past `historyEventBound` events (before the pipelined pages: a run
 * per page).
 */
export const autoTopUpSweepInputSchema = z.strictObject({
  after: z.string().nullable().default(null),
  pageSize: z.number().int().min(1).max(1000).default(100),
  historyEventBound: z.number().int().min(100).max(40_000).optional(),
  /** Passed to each top-up it starts. */
  options: z
    .strictObject({
      balanceRetryInterval: wait.optional(),
      unknownTransferDeadline: wait.optional(),
      reconcileInterval: wait.optional(),
    })
    .optional(),
  totals: z
    .strictObject({
      read: z.number(),
      started: z.number(),
      belowThreshold: z.number(),
      unreadable: z.number(),
      parentShort: z.number().optional(),
    })
    .optional(),
});
export type AutoTopUpSweepInput = z.input<typeof autoTopUpSweepInputSchema>;
