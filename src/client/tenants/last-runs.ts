import type { Client } from '@temporalio/client';
import type { WaitView } from '../current-wait.js';
import { readRun, type RunFailure } from '../run-status.js';
import {
  importWorkflowId,
  keyIssueWorkflowId,
  keyRevokeWorkflowId,
  lifecycleWorkflowId,
  onboardingWorkflowId,
  planConvergenceWorkflowId,
  rotationWorkflowId,
} from '../../domain/ids.js';

/**
 * The last run of each kind of workflow for one tenant, from Temporal (the workflow id is the business
 * key, so "the last run" is the latest run under that id): its status, its outcome when it completed,
 * and when it did not, why — the failure's message and its causes, redacted and cut short (failures
 * never carry a token by design; the redaction is a second guard). Every run that concerns the tenant
 * (issue 47): its onboarding or import, each slot's issue, rotation (or adoption) and revoke, suspend,
 * resume and close, its plan convergence, and its top-ups (every running one and the latest ended ones).
 */
export const RUN_KINDS = [
  'onboard',
  'import',
  'issue-key',
  'rotate',
  'revoke-key',
  'suspend',
  'resume',
  'close',
  'plan',
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
  /**
   * The run that started this one (a fleet run such as `plan-rollout:<name>@<version>`, or another of the tenant's).
   */
  partOf: string | null;
}

/** Top-ups ended: the latest this many are listed beside every running one (the ledger lists them all). */
export const ENDED_TOP_UPS_LISTED = 5;

export async function listLastRuns(client: Client, externalRef: string, slots: readonly string[]): Promise<LastRun[]> {
  return (await readLastRuns(client, externalRef, slots)).runs;
}

type RunId = { kind: RunKind; slot?: string; workflowId: string };

/**
 * The last runs, and the workflow ids read and found to have no run (`absent`: a later reader of the same answer
 * need not ask Temporal again). `slots` may still be coming (the tenant view reads them from the records meanwhile):
 * the ids that need no slot, the default slot's among them, are read at once, another slot's once it is known.
 */
export async function readLastRuns(
  client: Client,
  externalRef: string,
  slots: readonly string[] | Promise<readonly string[]>,
): Promise<{ runs: LastRun[]; absent: string[] }> {
  const idsOf = (all: readonly string[]): RunId[] => [
    { kind: 'onboard', workflowId: onboardingWorkflowId(externalRef) },
    { kind: 'import', workflowId: importWorkflowId(externalRef) },
    ...[...new Set(['default', ...all])].sort().flatMap((slot) => [
      { kind: 'issue-key' as const, slot, workflowId: keyIssueWorkflowId(externalRef, slot) },
      { kind: 'rotate' as const, slot, workflowId: rotationWorkflowId(externalRef, slot) },
      { kind: 'revoke-key' as const, slot, workflowId: keyRevokeWorkflowId(externalRef, slot) },
    ]),
    { kind: 'suspend', workflowId: lifecycleWorkflowId('suspend', externalRef) },
    { kind: 'resume', workflowId: lifecycleWorkflowId('resume', externalRef) },
    { kind: 'close', workflowId: lifecycleWorkflowId('close', externalRef) },
    { kind: 'plan', workflowId: planConvergenceWorkflowId(externalRef) },
  ];
  // Each id read once: the ids with no slot of the records' (the default slot's among them) at once.
  const reads = new Map<string, Promise<LastRun | null>>();
  const read = (id: RunId) => {
    let run = reads.get(id.workflowId);
    if (!run) {
      reads.set(id.workflowId, (run = lastRun(client, id)));
      // Not left unhandled when the answer fails before awaiting it (the slots' read, a top-up list).
      run.catch(() => undefined);
    }
    return run;
  };
  for (const id of idsOf([])) void read(id);
  // Top-ups have an id per idempotency key: they are found by the tenant's search attribute, every running
  // one (up to 64) and the latest ended ones. The runs of known ids are read meanwhile (one round trip less).
  const [ids, running, ended] = await Promise.all([
    Promise.resolve(slots).then(idsOf),
    topUpIds(client, externalRef, `ExecutionStatus = 'Running'`, 64),
    topUpIds(client, externalRef, `ExecutionStatus != 'Running'`, ENDED_TOP_UPS_LISTED),
  ]);
  const topUps = [...new Set([...running, ...ended])].map((workflowId) => ({ kind: 'fund' as const, workflowId }));
  const all = [...ids, ...topUps];
  const seen = await Promise.all(all.map(read));
  return {
    runs: seen.filter((run): run is LastRun => run !== null),
    absent: all.flatMap((id, at) => (seen[at] ? [] : [id.workflowId])),
  };
}

async function topUpIds(client: Client, externalRef: string, status: string, most: number): Promise<string[]> {
  const found = new Set<string>();
  const listed = client.workflow.list({
    query: `TenantExternalRef = '${externalRef.replace(/'/g, "''")}' AND WorkflowType = 'fundTenant' AND ${status}`,
    pageSize: Math.min(most, 20),
  });
  for await (const top of listed) {
    found.add(top.workflowId);
    if (found.size >= most) break;
  }
  return [...found];
}

async function lastRun(client: Client, id: RunId): Promise<LastRun | null> {
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
    partOf: run.parent,
  };
}

function outcomeOf(result: unknown): string | null {
  if (typeof result !== 'object' || result === null) return null;
  const { outcome, status } = result as { outcome?: unknown; status?: unknown };
  if (typeof outcome === 'string') return outcome;
  return typeof status === 'string' ? status : null;
}
