import { log, metricMeter, workflowInfo } from '@temporalio/workflow';

/**
 * One info line and one count per finished onboarding, transfer, rotation and close, with the
 * time it took. Both go through the workflow's own facilities, which stay silent during replay, so
 * a worker restart never counts or logs a run twice. The worker's Prometheus exporter
 * (WORKER_METRICS_ADDRESS) serves the metrics; ids only in the line, never a token.
 */
export type Operation = 'onboarding' | 'transfer' | 'top-up' | 'rotation' | 'close';

export const OUTCOMES_METRIC = 'tpo_outcomes';
export const DURATION_METRIC = 'tpo_duration_seconds';
export const CAP_REFUSALS_METRIC = 'tpo_cap_refusals';

export function recordOutcome(
  operation: Operation,
  outcome: string,
  startedAtMs: number,
  ids: Record<string, string | number | boolean | null>,
  level: 'info' | 'warn' = 'info',
): void {
  const durationMs = Math.max(0, Date.now() - startedAtMs);
  const tags = { operation, outcome };
  metricMeter
    .createCounter(OUTCOMES_METRIC, undefined, 'finished onboardings, transfers, rotations and closes by outcome')
    .add(1, tags);
  metricMeter
    .createHistogram(DURATION_METRIC, 'float', 's', 'how long each took, start to outcome')
    .record(durationMs / 1000, tags);
  log[level](`${operation} ${outcome}`, {
    operation,
    outcome,
    durationMs,
    workflowId: workflowInfo().workflowId,
    ...ids,
  });
}

/** A top-up a spend cap refused (by cap: tenant_per_day, tenant_per_month, parent_per_day). */
export function recordCapRefusal(cap: string, kind: string): void {
  metricMeter.createCounter(CAP_REFUSALS_METRIC, undefined, 'top-ups refused by a spend cap').add(1, { cap, kind });
}
