import type { Client } from '@temporalio/client';
import { appendAudit } from '../../db/audit-store.js';
import { setParentInsufficient } from '../../db/funding-store.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import type { DecisionBy } from '../../domain/operator-decisions.js';
import { topUpParentFundedUpdate } from '../../../workflows/fund-tenant-messages.js';
import { DecisionRefusedError, sendDecision } from '../send-decision.js';

/**
 * The parent's own balance was topped up: clear the parent-wide insufficient-balance state (the
 * auto top-up sweep starts top-ups again) and send parentFunded to every top-up waiting for it.
 * Audited under the operator's name. A run that stopped waiting meanwhile refuses, which is fine.
 */
export async function declareParentFunded(
  deps: { pool: Pool; client: Client },
  by: DecisionBy,
): Promise<{ stateCleared: boolean; retried: string[]; refused: string[] }> {
  const stateCleared = await withTransaction(deps.pool, async (tx) => {
    const cleared = await setParentInsufficient(tx, false, `operator:${by.operator}`);
    await appendAudit(tx, {
      actor: `operator:${by.operator}`,
      action: 'parent.funded',
      details: { reason: by.reason, stateCleared: cleared },
    });
    return cleared;
  });
  const retried: string[] = [];
  const refused: string[] = [];
  const query =
    `WorkflowType = 'fundTenant' AND ExecutionStatus = 'Running' AND TenantStatus = ` + `'waiting_for_parent_funds'`;
  for await (const run of deps.client.workflow.list({ query })) {
    try {
      await sendDecision(deps.client, run.workflowId, topUpParentFundedUpdate, by);
      retried.push(run.workflowId);
    } catch (error) {
      if (!(error instanceof DecisionRefusedError)) throw error;
      refused.push(run.workflowId);
    }
  }
  return { stateCleared, retried, refused };
}
