import { openDriftFindingCounts } from '../../client/record-counts.js';
import type { Queryable } from '../../client/records.js';
import { gaugeLines } from '../http/metrics.js';
import { DRIFT_KINDS } from '../../domain/drift-kinds.js';

/**
 * A gauge per drift kind for the gateway's /metrics (read at scrape time, like the inbox gauge):
 * `tpo_drift_findings_open{kind="..."}`. Every kind is always present, 0 when none is open, so an
 * alert rule can name a kind before it ever happens.
 */
export async function driftMetricLines(db: Queryable): Promise<string[]> {
  const counts = await openDriftFindingCounts(db);
  return gaugeLines(
    'tpo_drift_findings_open',
    'Open drift findings (platform vs our records), by kind; see docs/operations.md.',
    DRIFT_KINDS.map((kind) => ({ labels: { kind }, value: counts[kind] ?? 0 })),
  );
}
