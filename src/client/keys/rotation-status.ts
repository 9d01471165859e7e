import type { Client } from '@temporalio/client';
import { listRotations, OPEN_ROTATION_STATES } from '../../db/key-rotations-store.js';
import type { Pool } from '../../db/pool.js';
import { rotationStatusQuery, type RotationStatus } from '../../../workflows/keys/rotate-tenant-key-messages.js';
import { currentWaitOf, type WaitView } from '../current-wait.js';
import { queryOrNull } from '../query-run.js';

/**
 * The rotation section of `tenantctl status`: recent rotations from the records, and the live state
 * (stage, what it waits for, held reason) of any that is still open — a rotation's own status, and for
 * a rotation or an adoption of the slot its current wait (stage, since, the decisions that apply). No
 * secret: ids and fingerprints.
 */
export interface RotationSection {
  rotations: Array<{
    slot: string;
    fromGeneration: number;
    toGeneration: number;
    state: string;
    stage: string;
    emergency: boolean;
    workflowId: string;
    startedAt: string;
    finishedAt: string | null;
    live: RotationStatus | null;
    /** An open one's current wait (a rotation's or an adoption's, whichever runs under the id); else null. */
    waiting: WaitView | null;
  }>;
}

export async function getRotationSection(
  deps: { pool: Pool; client?: Client },
  externalRef: string,
): Promise<RotationSection> {
  const rows = await listRotations(deps.pool, externalRef, 10);
  const rotations = await Promise.all(
    rows.map(async (r) => {
      const open = deps.client !== undefined && OPEN_ROTATION_STATES.includes(r.state);
      // An open one's two queries together.
      const [live, waiting] = open
        ? await Promise.all([
            liveStatus(deps.client!, r.workflowId),
            currentWaitOf(deps.client!.workflow.getHandle(r.workflowId)),
          ])
        : [null, null];
      return {
        slot: r.slot,
        fromGeneration: r.fromGeneration,
        toGeneration: r.toGeneration,
        state: r.state,
        stage: r.stage,
        emergency: r.emergency,
        workflowId: r.workflowId,
        startedAt: r.createdAt.toISOString(),
        finishedAt: r.finishedAt?.toISOString() ?? null,
        live,
        waiting,
      };
    }),
  );
  return { rotations };
}

async function liveStatus(client: Client, workflowId: string): Promise<RotationStatus | null> {
  // Gone from Temporal (retention) or no worker to answer in time: the records still tell the state.
  return queryOrNull(client.workflow.getHandle(workflowId), rotationStatusQuery);
}
