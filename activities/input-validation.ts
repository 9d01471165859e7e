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
import { carriedFieldProblems, carriedFieldsOf } from '../src/domain/caller-fields.js';
import { auditOrigin } from './context.js';
import { lifecyclePolicy, planPolicy, type InputPolicy, type RunFacts } from './input-policy.js';

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

/** What the run tells its input check (the onboarding's first step gives only the first three). */
export interface ValidateWorkflowInputRequest<K extends WorkflowInputSchemaName> {
  schema: K;
  input: unknown;
  workflowType: string;
  /** The run continued as new (absent: a first run): its carried fields are its own. */
  continuedRun?: boolean;
  /** When the run started (ms): how old a close-sooner grant may be is measured from it. */
  startedAtMs?: number;
}

/**
 * `preflight`: the onboarding's checks against our records (activities/onboarding-preflight.ts),
 * run after its input parses; absent in unit use. `maxTransferMicroUsd`: TRANSFER_MAX_MICRO_USD
 * (absent: its default). `policy`: the rest of the server's policy (activities/input-policy.ts; absent: the
 * defaults, with no records read).
 *
 * Every problem is refused at once as one non-retryable INVALID_INPUT naming each field (details.problems): a
 * first run setting a field only its continuation sets, the schema's own rules, the transfer limit, the close
 * delay's minimum and the plans' key limit. Never a workflow task that fails for ever.
 */
export function createInputValidationActivities(
  preflight?: (input: ParsedWorkflowInput<'onboardTenant'>) => Promise<void>,
  maxTransferMicroUsd?: string,
  policy: InputPolicy = {},
) {
  /** The server's policy beyond the schema: problems, and the input as the run goes on with it. */
  async function policyOf(schema: WorkflowInputSchemaName, parsed: unknown, run: RunFacts) {
    if (schema === 'lifecycle') return lifecyclePolicy(policy, parsed as ParsedWorkflowInput<'lifecycle'>, run);
    if (schema === 'convergeTenantPlan' || schema === 'rolloutPlan')
      return { problems: await planPolicy(policy, parsed as { plan: string; version: number }, run), input: parsed };
    return { problems: [], input: parsed };
  }

  return {
    async validateWorkflowInput<K extends WorkflowInputSchemaName>(
      request: ValidateWorkflowInputRequest<K>,
    ): Promise<ParsedWorkflowInput<K>> {
      const schema = WORKFLOW_INPUT_SCHEMAS[request.schema] as unknown as z.ZodType<ParsedWorkflowInput<K>>;
      if (!schema) throw codedFailure(FailureCode.INVALID_INPUT, `no input schema named ${String(request.schema)}`);
      const run: RunFacts = {
        workflowType: request.workflowType,
        workflowId: auditOrigin().workflowId,
        continuedRun: request.continuedRun ?? false,
        startedAtMs: request.startedAtMs,
      };
      const refuse = (problems: string[]) =>
        codedFailure(FailureCode.INVALID_INPUT, `invalid ${request.workflowType} input: ${problems.join('; ')}`, {
          details: { problems },
        });
      const carried = run.continuedRun ? [] : carriedFieldProblems(carriedFieldsOf(request.schema), request.input);
      let parsed: ParsedWorkflowInput<K>;
      let problems: string[];
      try {
        parsed = parseInput(schema, request.input);
        assertWithinTransferLimit(transferAmountsOf(request.schema, parsed), maxTransferMicroUsd);
        const checked = await policyOf(request.schema, parsed, run);
        problems = [...carried, ...checked.problems];
        parsed = checked.input as ParsedWorkflowInput<K>;
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
        throw refuse([...carried, ...error.problems]);
      }
      if (problems.length) throw refuse(problems);
      if (request.schema === 'onboardTenant' && preflight)
        await preflight(parsed as ParsedWorkflowInput<'onboardTenant'>);
      return parsed;
    },
  };
}
