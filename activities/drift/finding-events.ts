import type pg from 'pg';
import type { DriftFindingRow } from '../../src/db/drift-findings-store.js';
import { emitEvent } from '../../src/db/events-store.js';

/** drift.finding_opened for an open finding (new or back), drift.finding_resolved for a resolved one. */
export async function emitFindingEvent(tx: pg.PoolClient, row: DriftFindingRow): Promise<void> {
  await emitEvent(tx, {
    type: row.status === 'open' ? 'drift.finding_opened' : 'drift.finding_resolved',
    externalRef: row.externalRef,
    data: {
      findingId: row.id,
      kind: row.kind,
      subject: row.subject,
      externalRef: row.externalRef,
      subaccountId: row.subaccountId,
      status: row.status,
      resolution: row.resolution,
      fix: row.fix,
      seenCount: row.seenCount,
    },
  });
}
