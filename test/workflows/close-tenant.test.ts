import type { Client, WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifecycleWorkflowId } from '../../src/domain/ids.js';
import { tenantStatusKey } from '../../src/domain/search-attributes.js';
import {
  cancelCloseUpdate,
  closeResolveTransferUpdate,
  closeStatusQuery,
} from '../../workflows/close-tenant-messages.js';
import { currentWaitQuery, type WaitView } from '../../workflows/waits-messages.js';
import { expectWaitOnEverySurface } from '../harness/wait-surfaces.js';
import { fastWorld, historyLength, uniqueId, type FastWorld, decide, answerOf } from '../harness/fast-workflow.js';

/**
 * closeTenant's decisions with mocked activities: each wait visible (currentWait, closeStatus, TenantStatus)
 * with its decisions, every run's history within the bound across a continuation (a low bound: a run
 * continues 50 events before it, so a few polls do), a cancel sent after a continuation landing, a delayed
 * close closing when its window ends, and the platform close only after the cleanup proved the tenant empty.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

/** The lowest bound the input takes (src/domain/wait-options.ts). */
const BOUND = 200;

async function until<T>(what: string, probe: () => Promise<T | undefined | null | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // Every 50 ms: a delayed close's window (2 s) must be seen while it lasts.
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The runs of a workflow id so far (continue-as-new starts a new one under the same id). */
async function runsOf(client: Client, workflowId: string): Promise<Array<{ runId: string; status: string }>> {
  const runs: Array<{ runId: string; status: string }> = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push({ runId: run.runId, status: run.status.name });
  return runs;
}

async function expectEveryRunWithinBound(client: Client, handle: WorkflowHandle): Promise<number> {
  const runs = await runsOf(client, handle.workflowId);
  const lengths = await Promise.all(runs.map((run) => historyLength(handle, run.runId)));
  for (const length of lengths) expect(length).toBeLessThanOrEqual(BOUND);
  return runs.length;
}

async function tenantStatusOf(handle: WorkflowHandle): Promise<unknown> {
  return (await handle.describe()).typedSearchAttributes.get(tenantStatusKey);
}

/** Waits until the run shows a wait in `stage` having polled `polls` times (per the mock's count). */
async function waitIn(handle: WorkflowHandle, stage: string, enough: () => boolean): Promise<WaitView> {
  // The mock's count first, looked at every 10 ms: no query while the run has not polled enough (the
  // rotations' wait is 29 s), and the stage is asked for as soon as it has (some stages last a few polls).
  const deadline = Date.now() + 60_000;
  while (!enough()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for enough polls in ${stage}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return until(`a wait in ${stage}`, async () => {
    const wait = await handle.query(currentWaitQuery);
    return wait?.stage === stage && enough() ? wait : null;
  });
}

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server's
// timers far more than on a CPU (the open rotations' wait alone is 29 polls a second apart).
describe.concurrent('closeTenant (mocked activities)', () => {
  it('waits out a delayed close visibly across a continuation; a cancel sent after it puts the tenant back', async () => {
    const ref = uniqueId('t');
    const calls = { schedule: [] as string[], windowEnded: 0, cancel: [] as string[], begin: 0 };
    await world.run(
      {
        scheduleClose: async (input) => {
          calls.schedule.push(input.runKey);
          return { subaccountId: 'sa_1', windowed: true };
        },
        closeWindowEnded: async () => {
          calls.windowEnded += 1;
        },
        cancelScheduledClose: async (input) => {
          calls.cancel.push(`${input.runKey} ${input.operator}`);
          return { status: 'active' };
        },
        beginClose: async () => {
          calls.begin += 1;
          return { subaccountId: 'sa_1', alreadyClosed: false, wasSuspended: true };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('closeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('close', ref),
          args: [
            {
              externalRef: ref,
              reason: 'customer left',
              operator: 'alice',
              after: '1h',
              // The window looks again every millisecond: a few dozen looks pass the bound.
              options: { pollCeiling: '1ms', historyEventBound: BOUND },
            },
          ],
        });
        // A continuation while waiting out the window.
        await until('a continuation', async () => (await runsOf(client, handle.workflowId)).length >= 2);
        // (The continued run answers once its first task ran: waitIn asks until it does.)
        const wait = await waitIn(handle, 'scheduled', () => true);
        expect(wait).toMatchObject({ stage: 'scheduled', decisions: ['cancelClose'] });
        expect(wait?.waitingFor).toMatch(/close window.*close --cancel/);
        await expectWaitOnEverySurface(client, handle, 'scheduled', {
          externalRef: ref,
          tenantStatus: 'close:scheduled',
        });
        // One wait since the first run: its start precedes the first continuation.
        const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
        expect(first.status.name).toBe('CONTINUED_AS_NEW');
        expect(Date.parse(wait!.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
        // The close time is the first run's, not recomputed by a continued run: at least an hour after the first run
        // started, and before an hour after it continued (a recomputed one could be no earlier). Bounds read from the
        // runs themselves, so a slow machine cannot move them.
        expect(Date.parse(wait!.nextCheckAt!)).toBeGreaterThanOrEqual(first.startTime.getTime() + 3_600_000);
        expect(Date.parse(wait!.nextCheckAt!)).toBeLessThan(first.closeTime!.getTime() + 3_600_000);
        expect(await answerOf(handle, closeStatusQuery)).toMatchObject({
          stage: 'scheduled',
          subaccountId: 'sa_1',
          timeLeft: expect.stringMatching(/^(59m|1h 0m)$/),
        });
        expect(await tenantStatusOf(handle)).toBe('close:scheduled');

        const answer = await decide(handle, cancelCloseUpdate, { operator: 'bob', reason: 'customer stays' });
        expect(answer.effect).toMatch(/cancelled/);
        expect(await handle.result()).toMatchObject({ status: 'close_cancelled', projectsDeleted: 0, keysRevoked: 0 });
        // Scheduled once, put back once, under the first run's key; nothing of the close itself ran.
        expect(calls.schedule).toEqual([handle.firstExecutionRunId]);
        expect(calls.cancel).toEqual([`${handle.firstExecutionRunId} bob`]);
        expect(calls.begin).toBe(0);
        expect(calls.windowEnded).toBe(0);
        expect(await handle.query(currentWaitQuery)).toBeNull();
        expect(await tenantStatusOf(handle)).toBe('close:close_cancelled');
        expect(await expectEveryRunWithinBound(client, handle)).toBeGreaterThanOrEqual(2);
        // Too late now: refused with the reason, nothing changes.
        await expect(decide(handle, cancelCloseUpdate, { operator: 'bob', reason: 'again please' })).rejects.toThrow();
        expect(calls.cancel).toHaveLength(1);
      },
    );
  }, 120_000);

  it('closes a delayed close when its window ends: resumed for the cleanup, the statement, then the close; a cancel is too late after', async () => {
    const ref = uniqueId('t');
    const log: string[] = [];
    let revokes = 0;
    let release!: () => void;
    const windowEnded = new Promise<void>((r) => (release = r));
    await world.run(
      {
        scheduleClose: async (input) => {
          log.push(`schedule ${input.after}`);
          return { subaccountId: 'sa_3', windowed: true };
        },
        // The window's end is held until a late cancel was refused: the run has left the window by then.
        closeWindowEnded: async () => {
          log.push('window ended');
          await windowEnded;
        },
        beginClose: async () => {
          log.push('begin');
          return { subaccountId: 'sa_3', alreadyClosed: false, wasSuspended: true };
        },
        listOpenRotationsOfTenant: async () => [],
        reconcileOpenTransfers: async () => [],
        revokeAllTenantKeys: async () => {
          revokes += 1;
          log.push(revokes === 1 ? 'revoke key_1' : 'revoke: none');
          return revokes === 1 ? { revoked: ['key_1'], stillActive: 0 } : { revoked: [], stillActive: 0 };
        },
        // The window suspended the tenant: it is resumed so that its projects can be deleted.
        resumeForCleanup: async () => {
          log.push('resume');
          return { resumed: true };
        },
        listTenantProjects: async () => {
          log.push('list: empty');
          return [];
        },
        writeCloseStatement: async () => {
          log.push('statement');
          return { written: true as const };
        },
        closeTenantOnPlatform: async () => {
          log.push('close');
          return { balanceMicroUsd: '0' };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('closeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('close', ref),
          // The window's end is a local activity the test holds: the workflow task it runs in is extended at
          // 80% of this timeout, and an Update sent meanwhile waits for that (10 s by default).
          workflowTaskTimeout: '2s',
          // A window of 2 s: 300 ms was over before a query under load (its file's tests run concurrently) saw it.
          args: [{ externalRef: ref, reason: 'customer left', operator: 'alice', after: '2s' }],
        });
        const wait = await waitIn(handle, 'scheduled', () => true);
        expect(wait.decisions).toEqual(['cancelClose']);
        // Past the window a cancel is too late: refused with the reason, the close goes on.
        await until('the window ended', async () => log.includes('window ended'));
        await expect(decide(handle, cancelCloseUpdate, { operator: 'bob', reason: 'too late' })).rejects.toMatchObject({
          cause: { message: expect.stringMatching(/not waiting out a close window \(stage closing\): too late/) },
        });
        release();
        expect(await handle.result()).toMatchObject({ status: 'closed', keysRevoked: 1, balanceLeftMicroUsd: '0' });
        expect(log).toEqual([
          'schedule 2s',
          'window ended',
          'begin',
          'revoke key_1',
          'resume',
          'list: empty',
          'revoke: none',
          'list: empty',
          'statement',
          'close',
        ]);
        expect(await tenantStatusOf(handle)).toBe('closed');
      },
    );
  }, 120_000);

  it('waits for the open rotations to roll back across a continuation, with no decision, then closes', async () => {
    // The rotations' wait polls a second apart whatever the input (ROTATION_POLL_MS): its own test, so that the
    // cleanup's waits below do not wait behind its 29 polls.
    const ref = uniqueId('t');
    const log: string[] = [];
    const stage = { rotations: true };
    const counts = { rotations: 0 };
    await world.run(
      {
        beginClose: async () => {
          log.push('begin');
          return { subaccountId: 'sa_4', alreadyClosed: false, wasSuspended: false };
        },
        listOpenRotationsOfTenant: async () => {
          counts.rotations += 1;
          return stage.rotations
            ? [{ rotationId: 'rot_1', slot: 'default', state: 'rolling_back', workflowId: `rotation:${ref}:default` }]
            : [];
        },
        reconcileOpenTransfers: async () => {
          log.push('reconcile: none');
          return [];
        },
        revokeAllTenantKeys: async () => {
          log.push('revoke: none');
          return { revoked: [], stillActive: 0 };
        },
        resumeForCleanup: async () => ({ resumed: false }),
        listTenantProjects: async () => {
          log.push('list: empty');
          return [];
        },
        writeCloseStatement: async () => {
          log.push('statement');
          return { written: true as const };
        },
        closeTenantOnPlatform: async () => {
          log.push('close');
          return { balanceMicroUsd: '0' };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('closeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('close', ref),
          args: [
            {
              externalRef: ref,
              reason: 'customer left',
              operator: 'alice',
              options: { pollInterval: '1ms', pollCeiling: '1ms', historyEventBound: BOUND },
            },
          ],
        });
        // Open rotations rolling back: polled (past the bound: the run continues in this wait), no decision applies.
        const rotations = await waitIn(handle, 'stopping_other_work', () => counts.rotations > 28);
        expect(rotations).toMatchObject({ decisions: [] });
        expect(rotations.waitingFor).toMatch(/rotation:.*roll back.*ROTATION_STILL_OPEN/);
        expect(await tenantStatusOf(handle)).toBe('close:stopping_other_work');
        await expectWaitOnEverySurface(client, handle, 'stopping_other_work', {
          externalRef: ref,
          tenantStatus: 'close:stopping_other_work',
        });
        // A decision that does not apply here is refused with the reason.
        await expect(
          decide(handle, closeResolveTransferUpdate, {
            purpose: 'initial-funding',
            outcome: 'applied',
            operator: 'alice',
            reason: 'too early',
          }),
        ).rejects.toMatchObject({ cause: { message: expect.stringMatching(/not waiting for an operator/) } });
        expect(log).toEqual(['begin']);
        stage.rotations = false;

        // Rolled back: the cleanup goes on, on a continued run, and the close comes last.
        expect(await handle.result()).toMatchObject({ status: 'closed', projectsDeleted: 0, balanceLeftMicroUsd: '0' });
        expect(log.filter((l) => l === 'begin')).toHaveLength(1);
        expect(log.slice(-4)).toEqual(['revoke: none', 'list: empty', 'statement', 'close']);
        expect(await tenantStatusOf(handle)).toBe('closed');
        expect(await expectEveryRunWithinBound(client, handle)).toBeGreaterThanOrEqual(2);
      },
    );
  }, 120_000);

  it('shows each cleanup wait with its decisions, stays within the bound, and closes only after the tenant is proven empty', async () => {
    const ref = uniqueId('t');
    const log: string[] = [];
    const stage = { transfers: 'unknown' as 'unknown' | 'needs_operator' | 'none', keys: 1 };
    const counts = { reconcile: 0, revoke: 0, list: 0 };
    const approvals: Array<{ close: boolean; purpose?: string; approvalId: string | null }> = [];
    let raced = false;
    let projectListings: string[][] = [];
    await world.run(
      {
        beginClose: async () => {
          log.push('begin');
          return { subaccountId: 'sa_2', alreadyClosed: false, wasSuspended: false };
        },
        listOpenRotationsOfTenant: async () => [],
        reconcileOpenTransfers: async () => {
          counts.reconcile += 1;
          return stage.transfers === 'none' ? [] : [{ purpose: 'initial-funding', state: stage.transfers }];
        },
        markTransferNeedsOperator: async () => {
          stage.transfers = 'needs_operator';
        },
        resolveTransferByOperator: async (input) => {
          log.push(`verdict ${input.purpose} ${input.outcome}`);
          stage.transfers = 'none';
          return { state: 'succeeded' };
        },
        consumeApproval: async (input) => {
          approvals.push({ close: input.close, purpose: input.purpose, approvalId: input.approvalId ?? null });
          return { required: true };
        },
        revokeAllTenantKeys: async () => {
          counts.revoke += 1;
          if (stage.keys > 0) {
            log.push('revoke: still active');
            return { revoked: ['key_1'], stillActive: 1 };
          }
          // The first proof of emptiness finds a key a workload made meanwhile: one more round.
          if (!raced && counts.list > 0 && projectListings.length === 0) {
            raced = true;
            log.push('revoke: key_2');
            return { revoked: ['key_2'], stillActive: 0 };
          }
          log.push('revoke: none');
          return { revoked: [], stillActive: 0 };
        },
        resumeForCleanup: async () => ({ resumed: false }),
        listTenantProjects: async () => {
          counts.list += 1;
          const listed = projectListings.shift() ?? [];
          log.push(`list: ${listed.join(',') || 'empty'}`);
          return listed.map((id) => ({ id, name: null }));
        },
        deleteTenantProject: async (input) => {
          log.push(`delete ${input.projectId}`);
          return { deleted: true };
        },
        writeCloseStatement: async () => {
          log.push('statement');
          return { written: true as const };
        },
        closeTenantOnPlatform: async () => {
          log.push('close');
          return { balanceMicroUsd: '5000' };
        },
      },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('closeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('close', ref),
          args: [
            {
              externalRef: ref,
              reason: 'customer left',
              operator: 'alice',
              options: {
                pollInterval: '1ms',
                pollCeiling: '1ms',
                unknownTransferDeadline: '1h',
                historyEventBound: BOUND,
              },
            },
          ],
        });
        // 1. Open rotations: none (their wait has its own test above).
        // 2. An unknown transfer reconciled by itself until its deadline: no decision applies yet. Polled past the
        //    bound: the run continues in this wait.
        await until('a continuation', async () => (await runsOf(client, handle.workflowId)).length >= 2);
        const unknown = await waitIn(handle, 'resolving_transfers', () => counts.reconcile > 3);
        expect(unknown).toMatchObject({ decisions: [] });
        expect(unknown.waitingFor).toMatch(/initial-funding.*unknown state/);
        await expectWaitOnEverySurface(client, handle, 'resolving_transfers', {
          externalRef: ref,
          tenantStatus: 'close:resolving_transfers',
        });
        expect(await answerOf(handle, closeStatusQuery)).toMatchObject({ stage: 'resolving_transfers' });
        // Past the deadline (the transfer is needs_operator now): the operator's verdict applies.
        stage.transfers = 'needs_operator';
        const asked = await waitIn(handle, 'needs_operator', () => true);
        expect(asked).toMatchObject({ decisions: ['resolveTransfer'], nextCheckAt: null });
        expect(await tenantStatusOf(handle)).toBe('close:needs_operator');
        await expectWaitOnEverySurface(client, handle, 'needs_operator', {
          externalRef: ref,
          tenantStatus: 'close:needs_operator',
        });
        // A verdict on a transfer the close does not wait for is refused, naming the open ones.
        await expect(
          decide(handle, closeResolveTransferUpdate, {
            purpose: 'top-up:nope',
            outcome: 'applied',
            operator: 'alice',
            reason: 'wrong transfer',
          }),
        ).rejects.toMatchObject({
          cause: { message: expect.stringMatching(/no open transfer "top-up:nope".*initial-funding/) },
        });
        const verdict = await decide(handle, closeResolveTransferUpdate, {
          purpose: 'initial-funding',
          outcome: 'applied',
          operator: 'alice',
          reason: 'seen in the wallet',
          approvalId: 'apr_close_1',
        });
        expect(verdict.transferState).toBe('succeeded');
        // Checked against its approval as a close's verdict on that transfer, once.
        expect(approvals).toEqual([{ close: true, purpose: 'initial-funding', approvalId: 'apr_close_1' }]);

        // 3. A key the platform still lists active after its revoke: revoked again, backing off.
        const keys = await waitIn(handle, 'revoking_keys', () => counts.revoke > 3);
        expect(keys).toMatchObject({ decisions: [] });
        expect(keys.waitingFor).toMatch(/still active/);
        await expectWaitOnEverySurface(client, handle, 'revoking_keys', {
          externalRef: ref,
          tenantStatus: 'close:revoking_keys',
        });
        // 4. A project deleted but still listed: waited for, deleted again, then gone.
        projectListings = [['proj_1'], ...Array.from({ length: 5 }, () => ['proj_1'])];
        stage.keys = 0;
        const stuck = await waitIn(handle, 'deleting_projects', () => counts.list > 3);
        expect(stuck.waitingFor).toMatch(/proj_1 deleted but still listed/);

        const result = await handle.result();
        expect(result).toMatchObject({ status: 'closed', projectsDeleted: 1, balanceLeftMicroUsd: '5000' });
        expect(await answerOf(handle, closeStatusQuery)).toMatchObject({
          stage: 'closed',
          projects: { proj_1: 'deleted' },
        });
        expect(await tenantStatusOf(handle)).toBe('closed');
        expect(log.filter((l) => l === 'begin')).toHaveLength(1);
        expect(log.filter((l) => l.startsWith('verdict'))).toEqual(['verdict initial-funding applied']);
        // The close comes last, right after the statement, which follows a listing that found nothing
        // together with a revoke that found nothing (the earlier proof found key_2: not yet empty).
        expect(log.slice(-4)).toEqual(['revoke: none', 'list: empty', 'statement', 'close']);
        expect(log.indexOf('revoke: key_2')).toBeGreaterThan(-1);
        expect(log.indexOf('revoke: key_2')).toBeLessThan(log.lastIndexOf('revoke: none'));
        expect(log.filter((l) => l === 'close')).toHaveLength(1);
        expect(await expectEveryRunWithinBound(client, handle)).toBeGreaterThanOrEqual(2);
      },
    );
  }, 120_000);
});
