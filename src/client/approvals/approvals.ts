import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { appendAudit } from '../../db/audit-store.js';
import {
  findApproval,
  insertApproval,
  listApprovals,
  setApprovalState,
  type ApprovalRow,
} from '../../db/approvals-store.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import { getTenant } from '../../db/tenants-store.js';
import {
  checkCloseTransferVerdict,
  checkDecisionBy,
  checkTransferVerdict,
  type TransferVerdict,
  REASON_MAX,
  type DecisionAnswer,
  type DecisionBy,
  type TransferOutcome,
} from '../../domain/operator-decisions.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { closeResolveTransferUpdate } from '../../../workflows/close-tenant-messages.js';
import { resolveTransferUpdate } from '../../../workflows/onboard-tenant-messages.js';
import { DecisionRefusedError, sendDecision } from '../send-decision.js';

/**
 * Four-eyes approvals. An action the policy gates (APPROVAL_POLICY) is written as a request in
 * `awaiting_approval`; a second, different operator approves or rejects it before it expires
 * (APPROVAL_TTL). An approved `resolveTransfer` is sent to its run at once, as the requester's
 * verdict with the approver named and the approval's id (the run checks the approval and uses it up
 * before acting, so a verdict sent straight to Temporal is held to the same rule); an approved
 * `keyReveal` lets the requester (and only them) reveal the token once. Every step is audited under the authenticated
 * operators.
 */
export type ApprovalCode = 'APPROVAL_NOT_FOUND' | 'APPROVAL_NOT_PENDING' | 'APPROVAL_EXPIRED' | 'SELF_APPROVAL';

export class ApprovalError extends Error {
  override name = 'ApprovalError';
  constructor(
    readonly code: ApprovalCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ResolveTransferParams {
  workflowId: string;
  close: boolean;
  outcome: TransferOutcome;
  purpose?: string;
}

function checkedBy(by: DecisionBy): DecisionBy {
  const checked = checkDecisionBy(by);
  if (!checked.ok) throw new InvalidInputError(checked.problems);
  return checked.value;
}

export async function requestApproval(
  pool: Pool,
  input: {
    action: ApprovalRow['action'];
    externalRef: string;
    params: Record<string, unknown>;
    by: DecisionBy;
    ttlMs: number;
  },
): Promise<ApprovalRow> {
  const by = checkedBy(input.by);
  return withTransaction(pool, async (tx) => {
    await getTenant(tx, input.externalRef);
    const row = await insertApproval(tx, {
      id: `apr_${randomBytes(9).toString('base64url')}`,
      action: input.action,
      externalRef: input.externalRef,
      params: input.params,
      requestedBy: by.operator,
      reason: by.reason,
      ttlMs: input.ttlMs,
    });
    await appendAudit(tx, {
      actor: `operator:${by.operator}`,
      action: 'approval.requested',
      externalRef: input.externalRef,
      subject: row.id,
      details: { action: input.action, params: input.params, reason: by.reason, expiresAt: row.expiresAt },
    });
    return row;
  });
}

/** Approves or rejects: only a pending, unexpired request, and never by the operator who asked. */
export async function decideApproval(
  deps: { pool: Pool; client: Client },
  id: string,
  decision: 'approve' | 'reject',
  rawBy: DecisionBy,
): Promise<{ approval: ApprovalRow; answer?: DecisionAnswer }> {
  const by = checkedBy(rawBy);
  const approval = await withTransaction(deps.pool, async (tx) => {
    const row = await findApproval(tx, id, { lock: true });
    if (!row) throw new ApprovalError('APPROVAL_NOT_FOUND', `no approval request ${id}`);
    if (row.state !== 'awaiting_approval')
      throw new ApprovalError(
        'APPROVAL_NOT_PENDING',
        `approval request ${id} is ${row.state}${row.decidedBy ? ` (by ${row.decidedBy})` : ''}: ` +
          `it can be decided once`,
      );
    if (row.expired)
      throw new ApprovalError(
        'APPROVAL_EXPIRED',
        `approval request ${id} expired at ${row.expiresAt.toISOString()}: nothing was done; ask again`,
      );
    if (row.requestedBy === by.operator)
      throw new ApprovalError(
        'SELF_APPROVAL',
        `approval request ${id} was asked by ${by.operator}: a second, different operator must decide it`,
      );
    const to = decision === 'approve' ? 'approved' : 'rejected';
    await setApprovalState(tx, id, 'awaiting_approval', to, { by: by.operator, reason: by.reason });
    await appendAudit(tx, {
      actor: `operator:${by.operator}`,
      action: `approval.${to}`,
      externalRef: row.externalRef,
      subject: id,
      details: { action: row.action, requestedBy: row.requestedBy, reason: by.reason },
    });
    return { ...row, state: to, decidedBy: by.operator, decisionReason: by.reason } as ApprovalRow;
  });
  if (decision === 'reject' || approval.action !== 'resolveTransfer') return { approval };

  const params = approval.params as unknown as ResolveTransferParams;
  const suffix = ` [four-eyes ${id}: approved by ${by.operator}]`;
  const verdict = {
    outcome: params.outcome,
    operator: approval.requestedBy,
    // By code points (the rule counts them): a UTF-16 cut could leave half a pair, which the run would refuse.
    reason: `${[...approval.reason].slice(0, REASON_MAX - [...suffix].length).join('')}${suffix}`,
    // The run checks it and uses it up (approval.executed) before acting: workflows/approval-gate.ts.
    approvalId: id,
  };
  const answer = params.close
    ? await sendDecision(deps.client, params.workflowId, closeResolveTransferUpdate, {
        ...verdict,
        purpose: params.purpose ?? '',
      })
    : await sendDecision(deps.client, params.workflowId, resolveTransferUpdate, verdict);
  return { approval: { ...approval, state: 'executed' }, answer };
}

export interface ApprovalView extends Omit<ApprovalRow, 'expired'> {
  /** The state, with `expired` for a pending request past its expiry. */
  status: ApprovalRow['state'] | 'expired';
}

export async function listApprovalViews(pool: Pool, options: { all?: boolean } = {}): Promise<ApprovalView[]> {
  return (await listApprovals(pool, options)).map(({ expired, ...row }) => ({
    ...row,
    status: expired ? 'expired' : row.state,
  }));
}

/**
 * A gated resolveTransfer: the verdict is checked by the workflow's own rules and the run must be
 * running, before the request is written (no request bound to fail); nothing is sent to the run.
 */
export async function requestTransferVerdictApproval(
  deps: { pool: Pool; client: Client },
  input: {
    externalRef: string;
    workflowId: string;
    close: boolean;
    purpose?: string;
    verdict: TransferVerdict;
    ttlMs: number;
  },
): Promise<ApprovalRow> {
  const checked = input.close
    ? checkCloseTransferVerdict({ ...input.verdict, purpose: input.purpose })
    : checkTransferVerdict(input.verdict);
  if (!checked.ok) throw new InvalidInputError(checked.problems);
  const run = await deps.client.workflow
    .getHandle(input.workflowId)
    .describe()
    .catch(() => undefined);
  if (run?.status.name !== 'RUNNING')
    throw new DecisionRefusedError(
      `no running workflow ${input.workflowId}: nothing is waiting for resolveTransfer`,
      'WORKFLOW_NOT_FOUND',
    );
  const { operator, reason, outcome } = checked.value;
  // A close's transfer as the run names it (`initial` is the stored intent `initial-funding`).
  const purpose = 'purpose' in checked.value ? checked.value.purpose : undefined;
  return requestApproval(deps.pool, {
    action: 'resolveTransfer',
    externalRef: input.externalRef,
    params: {
      workflowId: input.workflowId,
      close: input.close,
      outcome,
      ...(input.close ? { purpose } : {}),
    },
    by: { operator, reason },
    ttlMs: input.ttlMs,
  });
}
