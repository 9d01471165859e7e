import type { PlanRef } from './plan-ref.js';

/**
 * The plan rollout's names and numbers that workflows use: no zod, no I/O (the workflow bundle holds the SDK and
 * our code only, test/unit/workflow-bundle.test.ts), like top-up-ids.ts. The inputs' schemas are in
 * plan-rollout.ts.
 */

/**
 * A rollout keeps at most this share of a second's platform requests in flight (one tenant each): its children
 * wait their turns in the budget every process shares, and more would only wait longer.
 */
export const ROLLOUT_BUDGET_SHARE = 0.8;

/**
 * The caller key of a plan version's upgrade funding: one transfer per tenant and version, whoever retries.
 * A key has no `:`, so the name is escaped one-to-one (`_` → `__`, `:` → `_c`): two plans never share a key.
 */
export function planFundingKey(to: PlanRef): string {
  return `plan.${to.name.replace(/_/g, '__').replace(/:/g, '_c')}.v${to.version}`;
}
