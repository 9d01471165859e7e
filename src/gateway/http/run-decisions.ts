import type { Client } from '@temporalio/client';
import type { FastifyRequest } from 'fastify';
import { requestTransferVerdictApproval } from '../../client/approvals/approvals.js';
import { PARENT_KEY_DECISIONS } from '../../client/parent-key/parent-key.js';
import { decideRollout } from '../../client/plans/plan-rollout.js';
import type { Pool } from '../../client/records.js';
import { sendDecision } from '../../client/send-decision.js';
import { cancelRotation } from '../../client/keys/start-rotation.js';
import { requireTenant } from '../../client/tenant-records.js';
import { ONBOARDING_PURPOSE } from '../../domain/onboarding.js';
import {
  checkCloseTransferVerdict,
  checkDecisionBy,
  checkTransferVerdict,
  type Checked,
  type DecisionBy,
} from '../../domain/operator-decisions.js';
import type { Permission } from '../../domain/roles.js';
import {
  DECIDING_RUN_SHAPES,
  decidingRunOf,
  workflowIdOfRun,
  type DecidingRun,
  type DecidingRunKind,
} from '../../domain/run-ids.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { cancelCloseUpdate, closeResolveTransferUpdate } from '../../../workflows/close-tenant-messages.js';
import { abortKeyIssueUpdate, retryKeyIssueUpdate } from '../../../workflows/keys/key-slot-messages.js';
import {
  abortRotationUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from '../../../workflows/keys/rotate-tenant-key-messages.js';
import { parentFundedUpdate, resolveTransferUpdate } from '../../../workflows/onboard-tenant-messages.js';
import { actorOf, type PermissionByRequest } from './access.js';
import { GatewayError, GatewayErrorCode, invalidInput } from './errors.js';
import { badField, bodyOf } from './request-input.js';

/**
 * The one decision surface: `POST /v1/runs/:run/decisions/:decision`, where `:run` is the workflow id of the run
 * that waits (as `tenantctl status` and every wait show it: `onboard:acme`, `fund:acme:k1`, `close:acme`,
 * `rotate:acme:default`, `key:acme:ci`, `plan-rollout:gold@2`, `rotate-parent-key`) and `:decision` one of the
 * decisions that kind of run takes. One body parser: `{ reason, operator? }` and the decision's own fields; the
 * permission is the run kind's. The older per-area shapes are deprecated aliases that call `decideForRun`.
 * The routes are the runs area's (../runs/decision-routes.ts); this module is the table and `decideForRun` that the
 * runs, keys, plans and parent-key areas share.
 */

export interface RunDecisionDeps {
  pool: Pool;
  client: Client;
  /** The server's APPROVAL_POLICY / APPROVAL_TTL for resolveTransfer. */
  transferApproval: { gated: boolean; ttlMs: number };
}

/** What a decision answered: the status and the data of the envelope. */
export interface Decided {
  status: 200 | 202;
  data: Record<string, unknown>;
  /** The Update the run was sent, by its name (the deprecated shapes answer with it). */
  updateName?: string;
}

interface DecisionContext {
  deps: RunDecisionDeps;
  run: DecidingRun;
  workflowId: string;
  body: Record<string, unknown>;
  /** Who decides (the bearer's name), checked with the reason, when the decision takes one. */
  by: DecisionBy;
}

interface DecisionCase {
  /** Body fields besides `reason` and `operator`. */
  fields?: readonly string[];
  /** False: the decision takes no reason (a cancel records none). */
  reason?: false;
  decide: (context: DecisionContext) => Promise<Decided>;
}

interface RunKind {
  permission: Permission;
  example: string;
  decisions: Record<string, DecisionCase>;
}

const answered = (workflowId: string, decision: string, answer: object): Decided => ({
  status: 200,
  data: { workflowId, decision, ...answer },
});

/** A decision that is one Update of the run, with the checked decider. */
const update = (name: string, definition: Parameters<typeof sendDecision<DecisionBy>>[2]): DecisionCase => ({
  decide: async ({ deps, workflowId, by }) => ({
    ...answered(workflowId, name, await sendDecision(deps.client, workflowId, definition, by)),
    updateName: definition.name,
  }),
});

const resolveTransfer: DecisionCase = {
  fields: ['outcome', 'purpose'],
  decide: async ({ deps, run, workflowId, body, by }) => {
    const close = run.kind === 'close';
    if (!close && body['purpose'] !== undefined)
      throw badField('purpose', 'only for a close (an onboarding or a top-up has one transfer)');
    const purpose = close ? ((body['purpose'] as string | undefined) ?? ONBOARDING_PURPOSE) : undefined;
    const verdict = checked(
      close
        ? checkCloseTransferVerdict({ outcome: body['outcome'], ...by, purpose })
        : checkTransferVerdict({ outcome: body['outcome'], ...by }),
    );
    if (deps.transferApproval.gated) {
      const approval = await requestTransferVerdictApproval(deps, {
        externalRef: (run as { externalRef: string }).externalRef,
        workflowId,
        close,
        verdict: { operator: verdict.operator, reason: verdict.reason, outcome: verdict.outcome },
        ...(close ? { purpose: purpose as string } : {}),
        ttlMs: deps.transferApproval.ttlMs,
      });
      return {
        status: 202,
        data: { status: 'awaiting_approval', approvalId: approval.id, expiresAt: approval.expiresAt, workflowId },
      };
    }
    const answer = close
      ? await sendDecision(deps.client, workflowId, closeResolveTransferUpdate, {
          ...verdict,
          purpose: purpose as string,
        })
      : await sendDecision(deps.client, workflowId, resolveTransferUpdate, verdict);
    return { ...answered(workflowId, 'resolve-transfer', answer), updateName: resolveTransferUpdate.name };
  },
};

/** A key issue's decision: for a tenant that exists (404 TENANT_NOT_FOUND before anything is sent). */
const keyIssue = (name: string, definition: Parameters<typeof sendDecision<DecisionBy>>[2]): DecisionCase => ({
  decide: async (context) => {
    await requireTenant(context.deps.pool, (context.run as { externalRef: string }).externalRef);
    return update(name, definition).decide(context);
  },
});

const rollout = (decision: 'pause' | 'resume'): DecisionCase => ({
  decide: async ({ deps, run, workflowId, by }) => {
    const { plan } = run as Extract<DecidingRun, { kind: 'plan-rollout' }>;
    return answered(workflowId, decision, await decideRollout(deps.client, plan, decision, by));
  },
});

/** Every run that takes an operator decision, with the permission it needs and the decisions it takes. */
export const RUN_DECISIONS: Readonly<Record<DecidingRunKind, RunKind>> = {
  onboarding: {
    permission: 'runs.decide',
    example: 'onboard:acme',
    decisions: { 'resolve-transfer': resolveTransfer, 'parent-funded': update('parent-funded', parentFundedUpdate) },
  },
  'top-up': {
    permission: 'runs.decide',
    example: 'fund:acme:k1',
    decisions: { 'resolve-transfer': resolveTransfer, 'parent-funded': update('parent-funded', parentFundedUpdate) },
  },
  close: {
    permission: 'runs.decide',
    example: 'close:acme',
    decisions: { 'resolve-transfer': resolveTransfer, 'cancel-close': update('cancel-close', cancelCloseUpdate) },
  },
  rotation: {
    permission: 'runs.decide',
    example: 'rotate:acme:default',
    decisions: {
      'revoke-anyway': update('revoke-anyway', revokeAnywayUpdate),
      abort: update('abort', abortRotationUpdate),
      'retry-key-create': update('retry-key-create', retryKeyCreateUpdate),
      cancel: {
        reason: false,
        decide: async ({ deps, run, workflowId }) => {
          const { externalRef, slot } = run as Extract<DecidingRun, { kind: 'rotation' }>;
          const status = await cancelRotation(deps.client, externalRef, slot);
          if (!status)
            throw new GatewayError(404, GatewayErrorCode.RUN_NOT_FOUND, `No rotation of ${externalRef} slot ${slot}.`);
          return answered(workflowId, 'cancel', { stage: status.stage });
        },
      },
    },
  },
  'key-issue': {
    permission: 'keys.manage',
    example: 'key:acme:ci',
    decisions: {
      'retry-key-create': keyIssue('retry-key-create', retryKeyIssueUpdate),
      abort: keyIssue('abort', abortKeyIssueUpdate),
    },
  },
  'plan-rollout': {
    permission: 'plans.manage',
    example: 'plan-rollout:gold@2',
    decisions: { pause: rollout('pause'), resume: rollout('resume') },
  },
  'parent-key-rotation': {
    permission: 'parent.key',
    example: 'rotate-parent-key',
    decisions: Object.fromEntries(
      Object.entries(PARENT_KEY_DECISIONS).map(([name, definition]) => [name, update(name, definition)]),
    ),
  },
};

/** The run a `:run` path segment names; a 404 naming the shapes when it names none that takes a decision. */
export function decidingRunOfParam(raw: unknown): DecidingRun {
  const run = typeof raw === 'string' ? decidingRunOf(raw) : null;
  if (!run)
    throw new GatewayError(
      404,
      GatewayErrorCode.RUN_NOT_FOUND,
      `No run that takes a decision is named ${JSON.stringify(raw)}; a run is named by its workflow id: ` +
        `${Object.values(DECIDING_RUN_SHAPES).join(', ')}.`,
    );
  return run;
}

/** The permission of `POST /v1/runs/:run/decisions/:decision`: the run kind's. */
export const decisionPermission: PermissionByRequest = {
  dependsOn: "the run's kind",
  cases: Object.entries(RUN_DECISIONS).map(([name, kind]) => ({
    name,
    example: kind.example,
    permission: kind.permission,
  })),
  resolve: (request) => RUN_DECISIONS[decidingRunOfParam((request.params as { run?: unknown }).run).kind].permission,
};

/**
 * Takes one operator decision for a run: the decision named for its kind (404 naming the choices), the body
 * checked whole first (400 naming the field; nothing sent), then the run's answer (409 when its validator
 * refuses, 404 when no run waits: the gateway's error handler maps the typed errors).
 */
export async function decideForRun(
  deps: RunDecisionDeps,
  request: FastifyRequest,
  run: DecidingRun,
  decision: string,
  rawBody: unknown,
): Promise<Decided> {
  const kind = RUN_DECISIONS[run.kind];
  const chosen = Object.hasOwn(kind.decisions, decision) ? kind.decisions[decision] : undefined;
  if (!chosen)
    throw new GatewayError(
      404,
      GatewayErrorCode.ROUTE_NOT_FOUND,
      `No such decision for a ${run.kind} run; use one of ${Object.keys(kind.decisions).join(', ')}.`,
    );
  const takesReason = chosen.reason !== false;
  const body = bodyOf(rawBody, [...(takesReason ? ['reason'] : []), 'operator', ...(chosen.fields ?? [])]);
  const operator = actorOf(request, body['operator'], 'operator');
  const by = takesReason ? checked(checkDecisionBy({ operator, reason: body['reason'] })) : { operator, reason: '' };
  return chosen.decide({ deps, run, workflowId: workflowIdOfRun(run), body, by });
}

/** The deprecated shapes' answer: the Update's name as `decision`, as they answered before the one surface. */
export function asBefore(decided: Decided): Record<string, unknown> {
  return decided.updateName === undefined ? decided.data : { ...decided.data, decision: decided.updateName };
}

function checked<T>(result: Checked<T>): T {
  if (!result.ok) throw invalidInput(new InvalidInputError(result.problems));
  return result.value;
}

/** The table of docs/http-api.md (a test keeps it as generated): each run kind, its id, permission and decisions. */
export function runDecisionsMarkdown(): string {
  return [
    '| run | its workflow id | permission | decisions |',
    '|---|---|---|---|',
    ...Object.entries(RUN_DECISIONS).map(
      ([name, kind]) =>
        `| ${name} | \`${DECIDING_RUN_SHAPES[name as DecidingRunKind]}\` | \`${kind.permission}\` | ` +
        `${Object.keys(kind.decisions)
          .map((decision) => `\`${decision}\``)
          .join(', ')} |`,
    ),
  ].join('\n');
}
