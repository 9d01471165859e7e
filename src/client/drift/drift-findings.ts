import { listFindings } from '../../db/drift-findings-store.js';

export type { DriftFindingRow } from '../../db/drift-findings-store.js';

/** Drift findings from the records, newest first (open only, one tenant's, or at most `limit`). */
export const listDriftFindings = listFindings;
