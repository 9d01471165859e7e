import type { Client } from '@temporalio/client';
import { formatWait, type WaitView } from './current-wait.js';
import { readRun, type RunFailure } from './run-status.js';
import {
  keyIssueWorkflowId,
  keyRevokeWorkflowId,
  lifecycleWorkflowId,
  onboardingWorkflowId,
  rotationWorkflowId,
} from '../domain/ids.js';

/**
 * The last run of each kind of workflow for one tenant, from Temporal (the workflow id is the business
 * key, so "the last run" is the latest run under that id): its status, its outcome when it completed,
 * and when it did not, why — the failure's message and its causes, redacted and cut short (failures
 * never carry a token by design; the redaction is a second guard).
 */
export const RUN_KINDS = [
  'onboard',
  'issue-key',
  'rotate',
  'revoke-key',
  'suspend',
  'resume',
  'close',
  'fund',
] as const;
export type RunKind = (typeof RUN_KINDS)[number];

export interface LastRun {
  kind: RunKind;
  /** Key issues, rotations and revokes: the key slot. */
  slot?: string;
  workflowId: string;
  runId: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, … */
  status: string;
  startedAt: string;
  closedAt: string | null;
  /** Completed runs: the result's `outcome` or `status` word (e.g. completed, aborted, active, closed). */
  outcome: string | null;
  /** Runs that ended without completing. */
  failure: RunFailure | null;
  /** Completed runs: what the run returned (ids, counts, states; never a secret), as `tenantctl … --wait` prints it. */
  result: unknown;
  /** Running runs: what the run waits for now (stage, since, the decisions that apply), else null. */
  waiting: WaitView | null;
}

export async function listLastRuns(client: Client, externalRef: string, slots: readonly string[]): Promise<LastRun[]> {
  const ids: Array<{ kind: RunKind; slot?: string; workflowId: string }> = [
    { kind: 'onboard', workflowId: onboardingWorkflowId(externalRef) },
    ...[...new Set(['default', ...slots])].sort().flatMap((slot) => [
      { kind: 'issue-key' as const, slot, workflowId: keyIssueWorkflowId(externalRef, slot) },
      { kind: 'rotate' as const, slot, workflowId: rotationWorkflowId(externalRef, slot) },
      { kind: 'revoke-key' as const, slot, workflowId: keyRevokeWorkflowId(externalRef, slot) },
    ]),
    { kind: 'suspend', workflowId: lifecycleWorkflowId('suspend', externalRef) },
    { kind: 'resume', workflowId: lifecycleWorkflowId('resume', externalRef) },
    { kind: 'close', workflowId: lifecycleWorkflowId('close', externalRef) },
  ];
  // Top-ups have an id per idempotency key: the running ones are found by the tenant's search attribute.
  const running = client.workflow.list({
    query: `TenantExternalRef = '${externalRef.replace(/'/g, "''")}' AND WorkflowType = 'fundTenant' AND ExecutionStatus = 'Running'`,
    pageSize: 20,
  });
  for await (const top of running) {
    ids.push({ kind: 'fund', workflowId: top.workflowId });
    if (ids.length > 64) break;
  }
  const runs = await Promise.all(ids.map((id) => lastRun(client, id)));
  return runs.filter((run): run is LastRun => run !== null);
}

async function lastRun(
  client: Client,
  id: { kind: RunKind; slot?: string; workflowId: string },
): Promise<LastRun | null> {
  const run = await readRun(client, id.workflowId);
  if (!run) return null;
  return {
    ...id,
    runId: run.runId,
    status: run.status,
    startedAt: run.startedAt,
    closedAt: run.closedAt,
    outcome: outcomeOf(run.result),
    failure: run.failure,
    result: run.result ?? null,
    waiting: run.waiting,
  };
}

function outcomeOf(result: unknown): string | null {
  if (typeof result !== 'object' || result === null) return null;
  const { outcome, status } = result as { outcome?: unknown; status?: unknown };
  if (typeof outcome === 'string') return outcome;
  return typeof status === 'string' ? status : null;
}

/** A last run as `tenantctl status` prints it: status and times, why it failed, what it waits for. */
export function formatLastRun(run: LastRun): string[] {
  const name = run.slot ? `${run.kind} ${run.slot}` : run.kind;
  const lines = [
    `last ${name}: ${run.status}${run.outcome ? ` (${run.outcome})` : ''} [${run.workflowId}] ` +
      `started ${run.startedAt}${run.closedAt ? `, ended ${run.closedAt}` : ''}`,
  ];
  if (run.failure) {
    lines.push(`  failed: ${run.failure.message}${run.failure.type ? ` [${run.failure.type}]` : ''}`);
    for (const cause of run.failure.causes) lines.push(`  cause: ${cause}`);
  }
  if (run.waiting) lines.push(`  ${formatWait(run.waiting)}`);
  return lines;
}
