import { Context } from '@temporalio/activity';
import { appendAudit } from '../../src/db/audit-store.js';
import type { Pool } from '../../src/db/pool.js';

export function createHarnessActivities(deps: { pool: Pool }) {
  return {
    async recordHarnessPing(input: { marker: string }): Promise<void> {
      const { workflowExecution } = Context.current().info;
      await appendAudit(deps.pool, {
        actor: 'harness',
        action: 'harness.ping',
        subject: input.marker,
        workflowId: workflowExecution?.workflowId ?? null,
        runId: workflowExecution?.runId ?? null,
      });
    },
  };
}

export type HarnessActivities = ReturnType<typeof createHarnessActivities>;
