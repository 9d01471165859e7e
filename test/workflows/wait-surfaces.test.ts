import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentWaitOf } from '../../src/client/current-wait.js';
import { formatWait } from '../../src/client/wait-lines.js';
import { VIEW_QUERY_TIMEOUT_MS } from '../../src/client/query-run.js';
import { listLastRuns } from '../../src/client/tenants/last-runs.js';
import { formatLastRun } from '../../src/cli/status-lines.js';
import { describeRun } from '../../src/client/run-status.js';
import { waitReporter } from '../../src/cli/poll-run.js';
import { keyIssueWorkflowId } from '../../src/domain/ids.js';
import { retryKeyIssueUpdate } from '../../workflows/keys/key-slot-messages.js';
import { currentWaitQuery } from '../../workflows/waits-messages.js';
import { decide, fastWorld, uniqueId, type FastWorld } from '../harness/fast-workflow.js';

/**
 * One rule, every surface: each waiting workflow answers `currentWait` (its own fast test walks its wait
 * stages), and every surface reads that one answer. This test checks each surface against the answer for
 * a run that waits: the gateway's run view (what `--wait` polls), the tenant view's last runs (`status`,
 * CLI and HTTP), the CLI's wait lines, the TenantStatus search attribute, and the Web UI's current details.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const atLimit = {
  state: 'key_limit' as const,
  activeKeys: [{ id: 'key_a', name: 'web', lastUsedAt: null, lastUseKnown: true }],
};

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server far
// more than on a CPU.
describe.concurrent('a wait on every surface', () => {
  it('shows the same wait in the run view, the tenant view, the --wait lines, TenantStatus and the current details', async () => {
    const ref = uniqueId('t');
    let limit = true;
    const activities = {
      beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
      issueAndVerifyTenantKey: async () =>
        limit
          ? atLimit
          : { state: 'issued' as const, keyId: 'key_new', fingerprint: 'fp', orphansRevoked: [], verified: true },
    };
    await world.run(activities, async ({ client, taskQueue }) => {
      const workflowId = keyIssueWorkflowId(ref, 'ci');
      const handle = await client.workflow.start('issueTenantKey', {
        taskQueue,
        workflowId,
        args: [{ externalRef: ref, slot: 'ci', options: { keyLimitRetryInterval: '1h' } }],
      });
      let wait = null;
      while (!wait) wait = await handle.query(currentWaitQuery).catch(() => null);
      expect(wait).toMatchObject({ stage: 'key_limit', decisions: ['retryKeyCreate', 'abortKeyIssue'] });
      expect(Date.parse(wait.nextCheckAt!) - Date.parse(wait.since)).toBeGreaterThan(50 * 60_000);

      // The run view the gateway answers `--wait` polls with.
      const run = await describeRun(client, workflowId);
      expect(run?.waiting).toEqual(wait);
      // The tenant view's last runs (`tenantctl status`, GET /v1/tenants/:ref) and its printed line.
      const runs = await listLastRuns(client, ref, ['ci']);
      const issue = runs.find((r) => r.kind === 'issue-key' && r.slot === 'ci');
      expect(issue?.waiting).toEqual(wait);
      expect(formatLastRun(issue!).join('\n')).toContain(formatWait(wait));
      expect(formatWait(wait)).toMatch(
        /^waiting \(key_limit\) since .*active-key limit.*decisions: retryKeyCreate, abortKeyIssue/,
      );
      // The search attribute, set when the wait started.
      expect((await handle.describe()).searchAttributes['TenantStatus']).toEqual(['key_issue:key_limit']);
      // The Web UI's current details.
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toContain('key_limit');
      expect(metadata.currentDetails).toContain('decisions that apply: retryKeyCreate, abortKeyIssue');

      // The --wait lines: one when the wait starts, one when it ends; nothing repeated per poll.
      const lines: string[] = [];
      const report = waitReporter((line) => lines.push(line));
      report(run!.waiting);
      report(run!.waiting);
      limit = false;
      await decide(handle, retryKeyIssueUpdate, { operator: 'alice', reason: 'revoked web' });
      await handle.result();
      const ended = await describeRun(client, workflowId);
      expect(ended).toMatchObject({ status: 'COMPLETED', waiting: null });
      report(ended!.waiting);
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(
        /^waiting \(key_limit\): .*active-key limit.* — decisions: retryKeyCreate, abortKeyIssue$/,
      );
      expect(lines[1]).toBe(`wait over (key_limit), waited since ${wait.since}`);
      expect((await handle.describe()).searchAttributes['TenantStatus']).toEqual(['key_issue:issued']);
    });
  });

  it('answers the run view and the tenant view when no worker is there to answer the query', async () => {
    // A query is answered by a worker; with none polling, Temporal holds it until the caller's deadline.
    // Views bound it (VIEW_QUERY_TIMEOUT_MS) and show the run without the answer instead of hanging.
    const ref = uniqueId('t');
    const workflowId = keyIssueWorkflowId(ref, 'ci');
    const activities = {
      beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
      issueAndVerifyTenantKey: async () => atLimit,
    };
    const handle = await world.run(activities, async ({ client, taskQueue }) => {
      const started = await client.workflow.start('issueTenantKey', {
        taskQueue,
        workflowId,
        args: [{ externalRef: ref, slot: 'ci', options: { keyLimitRetryInterval: '1h' } }],
      });
      while (!(await started.query(currentWaitQuery).catch(() => null)));
      return started;
    });
    // The worker is gone; the run waits on.
    const client = world.client;
    const began = Date.now();
    // The three views asked at once (each waits out its own deadline: one after the other they took 15 s).
    const [wait, run, runs] = await Promise.all([
      currentWaitOf(handle),
      describeRun(client, workflowId),
      listLastRuns(client, ref, ['ci']),
    ]);
    expect(wait).toBeNull();
    expect(run).toMatchObject({ status: 'RUNNING', waiting: null });
    expect(runs.find((r) => r.kind === 'issue-key')).toMatchObject({ status: 'RUNNING', waiting: null });
    // Each within its deadline (a hang would end at the test's timeout instead).
    expect(Date.now() - began).toBeLessThan(3 * VIEW_QUERY_TIMEOUT_MS);
    await handle.terminate('test over');
  });
});
