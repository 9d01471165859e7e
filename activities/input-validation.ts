import type { z } from 'zod';
import {
  InvalidInputError,
  lifecycleInputSchema,
  onboardTenantInputSchema,
  parseInput,
} from '../src/domain/tenant-input.js';
import { reconcileFleetInputSchema } from '../src/domain/drift-input.js';
import { rotateFleetInputSchema, rotateTenantKeyInputSchema } from '../src/domain/rotation-input.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { assertWithinTransferLimit } from '../src/domain/transfer-limit.js';
import { fundTenantInputSchema } from '../src/domain/top-up-input.js';
import { autoTopUpSweepInputSchema } from '../src/domain/funding-policy-input.js';
import { adoptTenantKeysInputSchema, importTenantInputSchema } from '../src/domain/import-input.js';
import {
  issueTenantKeyInputSchema,
  revokeTenantKeyInputSchema,
  rotateParentKeyInputSchema,
} from '../src/domain/key-slot-input.js';
import { convergeTenantPlanInputSchema, rolloutPlanInputSchema } from '../src/domain/plan-rollout.js';

/**
 * Workflow inputs are validated here, in a local activity, with the same zod schemas as the CLI,
 * the helper and the gateway. Keeping zod out of the workflow bundle matters: with a reused V8
 * context every workflow run re-evaluates the bundle's modules, and zod's were the largest CPU cost
 * per onboarding (measured by the onboarding benchmark). Writes nothing, so a bad input leaves no trace.
 */
export const WORKFLOW_INPUT_SCHEMAS = {
  onboardTenant: onboardTenantInputSchema,
  lifecycle: lifecycleInputSchema,
  rotateTenantKey: rotateTenantKeyInputSchema,
  rotateFleet: rotateFleetInputSchema,
  reconcileFleet: reconcileFleetInputSchema,
  fundTenant: fundTenantInputSchema,
  autoTopUpSweep: autoTopUpSweepInputSchema,
  importTenant: importTenantInputSchema,
  adoptTenantKeys: adoptTenantKeysInputSchema,
  issueTenantKey: issueTenantKeyInputSchema,
  revokeTenantKey: revokeTenantKeyInputSchema,
  rotateParentKey: rotateParentKeyInputSchema,
  convergeTenantPlan: convergeTenantPlanInputSchema,
  rolloutPlan: rolloutPlanInputSchema,
} as const;
export type WorkflowInputSchemaName = keyof typeof WORKFLOW_INPUT_SCHEMAS;
export type ParsedWorkflowInput<K extends WorkflowInputSchemaName> = z.output<(typeof WORKFLOW_INPUT_SCHEMAS)[K]>;

/**
 * Amounts the worker holds to TRANSFER_MAX_MICRO_USD whoever started the run (a start sent straight
 * to Temporal included): refused as INVALID_INPUT before anything is written.
 */
function transferAmountsOf(schema: WorkflowInputSchemaName, parsed: unknown): Record<string, string | undefined> {
  if (schema === 'fundTenant') return { amountMicroUsd: (parsed as ParsedWorkflowInput<'fundTenant'>).amountMicroUsd };
  if (schema === 'onboardTenant')
    return { fundingMicroUsd: (parsed as ParsedWorkflowInput<'onboardTenant'>).fundingMicroUsd };
  return {};
}

/**
 * `preflight`: the onboarding's checks against our records (activities/onboarding-preflight.ts),
 * run after its input parses; absent in unit use. `maxTransferMicroUsd`: TRANSFER_MAX_MICRO_USD
 * (absent: its default).
 */
export function createInputValidationActivities(
  preflight?: (input: ParsedWorkflowInput<'onboardTenant'>) => Promise<void>,
  maxTransferMicroUsd?: string,
) {
  return {
    async validateWorkflowInput<K extends WorkflowInputSchemaName>(request: {
      schema: K;
      input: unknown;
      workflowType: string;
    }): Promise<ParsedWorkflowInput<K>> {
      const schema = WORKFLOW_INPUT_SCHEMAS[request.schema] as unknown as z.ZodType<ParsedWorkflowInput<K>>;
      if (!schema) throw codedFailure(FailureCode.INVALID_INPUT, `no input schema named ${String(request.schema)}`);
      let parsed: ParsedWorkflowInput<K>;
      try {
        parsed = parseInput(schema, request.input);
        assertWithinTransferLimit(transferAmountsOf(request.schema, parsed), maxTransferMicroUsd);
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
        throw codedFailure(
          FailureCode.INVALID_INPUT,
          `invalid ${request.workflowType} input: ${error.problems.join('; ')}`,
          { details: { problems: error.problems } },
        );
      }
      if (request.schema === 'onboardTenant' && preflight)
        await preflight(parsed as ParsedWorkflowInput<'onboardTenant'>);
      return parsed;
    },
  };
}
