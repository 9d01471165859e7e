import { appendAudit } from '../src/db/audit-store.js';
import { lockApprovalForUse, setApprovalState } from '../src/db/approvals-store.js';
import { withTransaction } from '../src/db/pool.js';
import { FailureCode } from '../src/domain/failures.js';
import type { TransferOutcome } from '../src/domain/operator-decisions.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';

/**
 * The worker's side of four-eyes (issue 31): a resolveTransfer verdict reaches a run however it was
 * sent (tenantctl, /v1, the Web UI, `temporal workflow update`), so the run itself asks here before
 * acting. When the worker's APPROVAL_POLICY gates resolveTransfer the verdict must carry an approval
 * that a second operator granted for exactly this run and this verdict, unexpired and not yet used;
 * it is used up here, in the same transaction as its audit row. A refusal writes nothing.
 */
export interface ConsumeApprovalInput {
  /** The run's own id (workflowInfo), never a value from the verdict. */
  workflowId: string;
  externalRef: string;
  /** closeTenant's verdict (names its transfer by purpose) rather than onboarding's or a top-up's. */
  close: boolean;
  purpose?: string;
  outcome: TransferOutcome;
  operator: string;
  approvalId?: string | null;
}

export type ConsumeApprovalResult =
  { required: false } | { required: boolean; approvalId: string; requestedBy: string; approvedBy: string };

type Why =
  | 'not_found'
  | 'not_approved'
  | 'expired'
  | 'used'
  | 'self_approved'
  | 'other_action'
  | 'other_tenant'
  | 'other_run'
  | 'other_verdict'
  | 'other_operator';

function notValid(id: string, why: Why, message: string) {
  return activityFailure(FailureCode.APPROVAL_NOT_VALID, `approval ${id} ${message}: nothing was done`, {
    details: { approvalId: id, why },
  });
}

export function createApprovalActivities(deps: ActivityDeps) {
  const gated = () => deps.approvals?.actions.has('resolveTransfer') ?? false;
  return {
    /**
     * Not gated and no approval given: `{ required: false }`, nothing read. An approval given is
     * always checked and used, gated or not (the client that asked for it counts on its use).
     */
    consumeApproval: boundary(async (input: ConsumeApprovalInput): Promise<ConsumeApprovalResult> => {
      const required = gated();
      const id = input.approvalId ?? null;
      if (id === null) {
        if (!required) return { required: false };
        throw activityFailure(
          FailureCode.APPROVAL_REQUIRED,
          `resolveTransfer on ${input.workflowId} needs a second operator's approval (APPROVAL_POLICY): ask with ` +
            '`tenantctl resolve-transfer`, and send the approved verdict with its approvalId: nothing was done',
          { details: { workflowId: input.workflowId } },
        );
      }
      return withTransaction(deps.pool, async (tx) => {
        const row = await lockApprovalForUse(tx, id);
        if (!row) throw notValid(id, 'not_found', 'does not exist');
        if (row.action !== 'resolveTransfer') throw notValid(id, 'other_action', `is for ${row.action}`);
        if (row.state === 'executed') throw notValid(id, 'used', 'was already used (an approval acts once)');
        if (row.state !== 'approved') throw notValid(id, 'not_approved', `is ${row.state}, not approved`);
        if (row.pastExpiry) throw notValid(id, 'expired', `expired at ${row.expiresAt.toISOString()}`);
        if (!row.decidedBy || row.decidedBy === row.requestedBy)
          throw notValid(id, 'self_approved', 'was not approved by a second operator');
        if (row.externalRef !== input.externalRef) throw notValid(id, 'other_tenant', 'is for another tenant');
        const params = row.params;
        if (params.workflowId !== input.workflowId)
          throw notValid(id, 'other_run', `is for ${String(params.workflowId)}, not ${input.workflowId}`);
        const sameVerdict =
          params.outcome === input.outcome &&
          Boolean(params.close) === input.close &&
          (!input.close || params.purpose === input.purpose);
        if (!sameVerdict) throw notValid(id, 'other_verdict', 'approves another verdict');
        // The verdict is the requester's, carried out with the approver's consent: the audit names both.
        if (input.operator !== row.requestedBy)
          throw notValid(id, 'other_operator', `was asked by ${row.requestedBy}, not ${input.operator}`);
        const origin = auditOrigin();
        await setApprovalState(tx, id, 'approved', 'executed');
        await appendAudit(tx, {
          actor: `operator:${row.decidedBy}`,
          action: 'approval.executed',
          externalRef: row.externalRef,
          subject: id,
          workflowId: origin.workflowId,
          runId: origin.runId,
          details: { action: row.action, workflowId: input.workflowId, outcome: input.outcome, by: 'worker' },
        });
        return { required, approvalId: id, requestedBy: row.requestedBy, approvedBy: row.decidedBy };
      });
    }),
  };
}
