import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requestTransferVerdictApproval } from '../client/approvals.js';
import { declareParentFunded } from '../client/parent-funded.js';
import { DecisionRefusedError, sendDecision } from '../client/send-decision.js';
import { cancelClose } from '../client/start-lifecycle.js';
import type { Pool } from '../client/records.js';
import { TenantNotFoundError } from '../domain/record-errors.js';
import { lifecycleWorkflowId, onboardingWorkflowId, topUpWorkflowId } from '../domain/ids.js';
import { ONBOARDING_PURPOSE } from '../domain/onboarding.js';
import {
  checkCloseTransferVerdict,
  checkDecisionBy,
  checkTransferVerdict,
  type Checked,
} from '../domain/operator-decisions.js';
import { InvalidInputError } from '../domain/tenant-input.js';
import { idempotencyKeySchema } from '../domain/top-up-input.js';
import { closeResolveTransferUpdate } from '../../workflows/close-tenant-messages.js';
import { parentFundedUpdate, resolveTransferUpdate } from '../../workflows/onboard-tenant-messages.js';
import { actorOf } from './access.js';
import { GatewayError, GatewayErrorCode, invalidInput, tenantNotFound, sendData } from './errors.js';
import { badField, bodyOf, refOf } from './request-input.js';
import { anyObject, decisionBody, doc, externalRefParam, fromZod } from './api-docs.js';

/**
 * Operator decisions for a waiting run (permission `runs.decide`), the way `tenantctl` sends them:
 * - `POST /v1/tenants/:ref/decisions/resolve-transfer` `{ outcome, reason, close?, purpose?, key? }`: with the
 *   server's APPROVAL_POLICY gating resolveTransfer, the request is written (202 with it) and nothing is sent to
 *   the run; otherwise the Update is sent (200 with the run's answer);
 * - `POST /v1/tenants/:ref/decisions/parent-funded` `{ reason, key? }` (its onboarding, or that top-up), and
 *   `POST /v1/parent/funded` `{ reason }` (the parent-wide state, every waiting top-up);
 * - `POST /v1/tenants/:ref/close/cancel` `{ reason }`: undo a delayed close inside its window.
 * Who decides is the bearer's name. The input is checked whole first (400 naming the field, nothing sent);
 * a decision the run refuses (its Update validator: not waiting for it, no approval) is a 409 naming why, one for
 * no run a 404.
 */
export interface DecisionRoutesDeps {
  pool: Pool;
  client: Client;
  /** The server's APPROVAL_POLICY / APPROVAL_TTL for resolveTransfer. */
  transferApproval: { gated: boolean; ttlMs: number };
}

export function registerDecisionRoutes(app: FastifyInstance, deps: DecisionRoutesDeps): void {
  void app.register(async (api) => {
    api.post(
      '/v1/tenants/:externalRef/decisions/resolve-transfer',
      { config: { permission: 'runs.decide' }, schema: resolveTransferDoc },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        const body = bodyOf(request.body, ['outcome', 'reason', 'close', 'purpose', 'key', 'operator']);
        const operator = actorOf(request, body['operator'], 'operator');
        const close = flagOf(body['close'], 'close');
        const key = body['key'] === undefined ? undefined : topUpKeyOf(body['key']);
        if (!close && body['purpose'] !== undefined)
          throw badField('purpose', 'only with close (an onboarding or a top-up has one transfer)');
        if (close && key !== undefined) throw badField('key', 'not with close (name the transfer with purpose)');
        const purpose = close ? (body['purpose'] ?? ONBOARDING_PURPOSE) : undefined;
        const verdict = checked(
          close
            ? checkCloseTransferVerdict({ outcome: body['outcome'], operator, reason: body['reason'], purpose })
            : checkTransferVerdict({ outcome: body['outcome'], operator, reason: body['reason'] }),
        );
        const workflowId = close
          ? lifecycleWorkflowId('close', externalRef)
          : key !== undefined
            ? topUpWorkflowId(externalRef, key)
            : onboardingWorkflowId(externalRef);
        try {
          if (deps.transferApproval.gated) {
            const { operator: by, reason, outcome } = verdict;
            const approval = await requestTransferVerdictApproval(deps, {
              externalRef,
              workflowId,
              close,
              verdict: { operator: by, reason, outcome },
              ...(close ? { purpose: purpose as string } : {}),
              ttlMs: deps.transferApproval.ttlMs,
            });
            return sendData(reply, 202, {
              status: 'awaiting_approval',
              approvalId: approval.id,
              expiresAt: approval.expiresAt,
              workflowId,
            });
          }
          const answer = close
            ? await sendDecision(deps.client, workflowId, closeResolveTransferUpdate, {
                ...verdict,
                purpose: purpose as string,
              })
            : await sendDecision(deps.client, workflowId, resolveTransferUpdate, verdict);
          return sendData(reply, 200, { workflowId, decision: 'resolveTransfer', ...answer });
        } catch (error) {
          throw translated(error);
        }
      },
    );

    api.post(
      '/v1/tenants/:externalRef/decisions/parent-funded',
      { config: { permission: 'runs.decide' }, schema: parentFundedDoc },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        const body = bodyOf(request.body, ['reason', 'key', 'operator']);
        const by = checked(
          checkDecisionBy({ operator: actorOf(request, body['operator'], 'operator'), reason: body['reason'] }),
        );
        const workflowId =
          body['key'] === undefined
            ? onboardingWorkflowId(externalRef)
            : topUpWorkflowId(externalRef, topUpKeyOf(body['key']));
        try {
          const answer = await sendDecision(deps.client, workflowId, parentFundedUpdate, by);
          return sendData(reply, 200, { workflowId, decision: 'parentFunded', ...answer });
        } catch (error) {
          throw translated(error);
        }
      },
    );

    api.post(
      '/v1/parent/funded',
      { config: { permission: 'runs.decide' }, schema: parentWideFundedDoc },
      async (request, reply) => {
        const by = decisionByOf(request);
        return sendData(reply, 200, await declareParentFunded(deps, by));
      },
    );

    api.post(
      '/v1/tenants/:externalRef/close/cancel',
      { config: { permission: 'runs.decide' }, schema: cancelCloseDoc },
      async (request, reply) => {
        const externalRef = refOf(request.params);
        const by = decisionByOf(request);
        try {
          const answer = await cancelClose(deps.client, externalRef, by);
          return sendData(reply, 200, { externalRef, cancelled: true, ...answer });
        } catch (error) {
          throw translated(error);
        }
      },
    );
  });
}

/** `{ reason }` (and `operator`, which may only repeat the bearer's name) as a checked decision. */
function decisionByOf(request: FastifyRequest) {
  const body = bodyOf(request.body, ['reason', 'operator']);
  return checked(checkDecisionBy({ operator: actorOf(request, body['operator'], 'operator'), reason: body['reason'] }));
}

function flagOf(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw badField(field, 'must be true or false');
  return value;
}

function topUpKeyOf(value: unknown): string {
  const parsed = idempotencyKeySchema.safeParse(value);
  if (!parsed.success) throw badField('key', parsed.error.issues[0]?.message ?? 'invalid');
  return parsed.data;
}

function checked<T>(result: Checked<T>): T {
  if (!result.ok) throw invalidInput(new InvalidInputError(result.problems));
  return result.value;
}

function translated(error: unknown): unknown {
  if (error instanceof InvalidInputError) return invalidInput(error);
  if (error instanceof TenantNotFoundError) return tenantNotFound();
  if (error instanceof DecisionRefusedError) {
    if (error.code === 'WORKFLOW_NOT_FOUND')
      return new GatewayError(404, GatewayErrorCode.RUN_NOT_FOUND, `${error.message}.`);
    // The run's own refusal (not waiting for it, no approval, …): nothing reached its history.
    return new GatewayError(409, GatewayErrorCode.DECISION_NOT_APPLICABLE, `${error.message} [${error.code}].`);
  }
  return error;
}

const refused =
  "The run refuses the decision now (DECISION_NOT_APPLICABLE: its Update validator's reason); nothing reached it.";
const noRun = 'No run under this business key (RUN_NOT_FOUND), or no such tenant (TENANT_NOT_FOUND).';
const topUpKey = { ...fromZod(idempotencyKeySchema), description: "A top-up's Idempotency-Key: decide for that run." };

const resolveTransferDoc = doc({
  summary: 'Say whether an ambiguous transfer was applied (resolveTransfer)',
  description:
    "For the tenant's onboarding, a top-up (`key`) or its close (`close: true`, the transfer named by `purpose`). " +
    "With the server's APPROVAL_POLICY gating resolveTransfer, the request is written (202) for a second operator " +
    "and nothing is sent to the run; otherwise the Update is sent (200 with the run's answer).",
  params: externalRefParam,
  body: decisionBody(
    {
      outcome: { type: 'string', enum: ['applied', 'not-applied'] },
      close: { type: 'boolean' },
      purpose: { type: 'string', description: 'With close only: the transfer to resolve.' },
      key: topUpKey,
    },
    ['outcome', 'reason'],
  ),
  answers: {
    200: { description: "Sent: the run's answer.", data: anyObject },
    202: { description: 'Awaiting a second operator (`status: awaiting_approval`, `approvalId`).', data: anyObject },
    404: noRun,
    409: refused,
  },
});

const parentFundedDoc = doc({
  summary: "Tell the tenant's onboarding, or one top-up (`key`), that the parent is funded again",
  params: externalRefParam,
  body: decisionBody({ key: topUpKey }),
  answers: { 200: { description: "Sent: the run's answer.", data: anyObject }, 404: noRun, 409: refused },
});

const parentWideFundedDoc = doc({
  summary: 'Declare the parent funded again: every top-up waiting for the parent is told',
  body: decisionBody(),
  answers: { 200: { description: 'The parent-wide state and the runs told.', data: anyObject } },
});

const cancelCloseDoc = doc({
  summary: 'Cancel a delayed close inside its window',
  params: externalRefParam,
  body: decisionBody(),
  answers: {
    200: { description: 'Cancelled: the tenant stays suspended.', data: anyObject },
    404: noRun,
    409: refused,
  },
});
