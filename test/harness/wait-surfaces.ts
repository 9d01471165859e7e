import type { Client, WorkflowHandle } from '@temporalio/client';
import { expect } from 'vitest';
import { formatWait } from '../../src/client/wait-lines.js';
import { listLastRuns } from '../../src/client/tenants/last-runs.js';
import { formatLastRun } from '../../src/cli/status-lines.js';
import { describeRun } from '../../src/client/run-status.js';
import { waitReporter } from '../../src/cli/poll-run.js';
import { tenantStatusKey } from '../../src/domain/search-attributes.js';
import { currentWaitQuery, type WaitView } from '../../workflows/waits-messages.js';

/**
 * One wait stage checked on every surface (issue 35: "a test walks every wait stage of every workflow and checks
 * each surface"). Each waiting workflow's fast test calls this at each wait stage it walks, while the run holds
 * that stage; test/workflows/wait-surfaces.test.ts checks the surfaces' wording once, in detail.
 *
 * The run's one answer, `currentWait`, must be what each surface shows: the run view (what `--wait` polls and
 * its line when the wait starts), the tenant view's last runs and `tenantctl status`'s printed line, the
 * TenantStatus search attribute (for a run about a tenant), and the Web UI's current details. A poll changes
 * `nextCheckAt` and what a wait says of its progress, so the stage, since when and the decisions are compared.
 */
export interface TenantSurfaces {
  externalRef: string;
  /** The key slot of a key run (its last runs are listed per slot). */
  slot?: string;
  /** What TenantStatus says while the run waits in this stage. */
  tenantStatus: string;
}

const same = (wait: WaitView | null | undefined) =>
  wait ? { stage: wait.stage, since: wait.since, decisions: wait.decisions } : null;

export async function expectWaitOnEverySurface(
  client: Client,
  handle: WorkflowHandle,
  stage: string,
  tenant?: TenantSurfaces,
  timeoutMs = 20_000,
): Promise<WaitView> {
  const deadline = Date.now() + timeoutMs;
  let seen: { problems: string[]; wait: WaitView | null };
  for (;;) {
    seen = await surfaceProblems(client, handle, stage, tenant).catch((error: Error) => ({
      problems: [error.message],
      wait: null,
    }));
    if (seen.problems.length === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(seen.problems, `${handle.workflowId} at ${stage}`).toEqual([]);
  return seen.wait!;
}

async function surfaceProblems(
  client: Client,
  handle: WorkflowHandle,
  stage: string,
  tenant: TenantSurfaces | undefined,
): Promise<{ problems: string[]; wait: WaitView | null }> {
  const problems: string[] = [];
  const wait = await handle.query(currentWaitQuery);
  if (wait?.stage !== stage) return { problems: [`currentWait: ${wait?.stage ?? 'no wait'}, expected ${stage}`], wait };
  const expected = same(wait);

  // The run view (GET .../run, what every --wait polls) and the --wait line when the wait starts.
  const run = await describeRun(client, handle.workflowId);
  if (JSON.stringify(same(run?.waiting)) !== JSON.stringify(expected))
    problems.push(`run view: ${JSON.stringify(same(run?.waiting))}, currentWait ${JSON.stringify(expected)}`);
  const lines: string[] = [];
  waitReporter((line) => lines.push(line))(run?.waiting);
  if (!run?.waiting || !lines[0]?.startsWith(`waiting (${stage}): ${run.waiting.waitingFor}`))
    problems.push(`--wait line: ${lines[0] ?? 'none'}`);

  // The Web UI's current details.
  const { currentDetails = '' } = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  // (What a wait says may change with each poll, e.g. how long the key has been quiet: the stage is compared.)
  if (!currentDetails.includes(`**waiting** (${stage}): `))
    problems.push(`current details do not show the wait: ${currentDetails.slice(0, 200)}`);
  if (wait.decisions.length > 0 && !currentDetails.includes(`decisions that apply: ${wait.decisions.join(', ')}`))
    problems.push(`current details do not list the decisions ${wait.decisions.join(', ')}`);

  if (tenant) {
    // The tenant view (tenantctl status, GET /v1/tenants/:ref): the run among its last runs, and its printed line.
    const runs = await listLastRuns(client, tenant.externalRef, tenant.slot ? [tenant.slot] : []);
    const listed = runs.find((r) => r.workflowId === handle.workflowId);
    if (!listed) problems.push(`tenant view: ${handle.workflowId} is not among the last runs`);
    else {
      if (JSON.stringify(same(listed.waiting)) !== JSON.stringify(expected))
        problems.push(`tenant view: ${JSON.stringify(same(listed.waiting))}, currentWait ${JSON.stringify(expected)}`);
      const printed = formatLastRun(listed).join('\n');
      if (listed.waiting && !printed.includes(formatWait(listed.waiting)))
        problems.push(`tenantctl status line: ${printed}`);
    }
    // TenantStatus, set when the wait started.
    const status = (await handle.describe()).typedSearchAttributes.get(tenantStatusKey);
    if (status !== tenant.tenantStatus) problems.push(`TenantStatus: ${status}, expected ${tenant.tenantStatus}`);
  }
  return { problems, wait };
}

/**
 * How many times the run's current history set a search attribute: a wait sets TenantStatus when it starts and
 * ends, never per poll, so a run that polled hundreds of times holds a few of these.
 */
export async function attributeUpserts(handle: WorkflowHandle): Promise<number> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.filter((event) => event.upsertWorkflowSearchAttributesEventAttributes).length;
}
