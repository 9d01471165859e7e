import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
  rotationStatusQuery,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import {
  fastWorld,
  historyLength,
  uniqueId,
  until,
  waitForStage,
  expectSinceCarried,
  waitOf,
  type FastWorld,
  decide,
  expectLooksWithoutEvents,
  paceAfter,
  untilRuns,
  signalUntilContinued,
} from '../harness/fast-workflow.js';
import { sentWithFirstTask } from '../harness/first-task.js';
import { expectWaitOnEverySurface } from '../harness/wait-surfaces.js';
import { begunRotation } from '../harness/rotation-begun.js';

/**
 * rotateTenantKey's waits with mocked activities: key_limit, deploying, waiting_for_quiet and held each
 * shown through currentWait (with the decisions that apply) and TenantStatus; the polls bounded across
 * continuations; decisions landing after a continuation; decisions that do not apply refused with the reason.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
/** The polls a test waits for (about 120 at most) and some: slower after them (paceAfter). */
const PACED_AFTER = 150;
const OLD = 'key_old';
const NEW = 'key_new';
const BEFORE_DEPLOY = '2026-01-01T00:00:00.000Z';
const AT_LIMIT = {
  state: 'key_limit' as const,
  activeKeys: [
    { id: OLD, name: 'default-g1', lastUsedAt: BEFORE_DEPLOY, lastUseKnown: true },
    { id: 'key_other', name: 'ci', lastUsedAt: null, lastUseKnown: true },
  ],
};
const ISSUED = { state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] };

interface World {
  /** What issueTenantKey answers (the key limit until `limit` is false). */
  limit: boolean;
  /** The old key's last use as the platform shows it (null: never used). */
  oldLastUse: string | null;
  /** When set, the old key's last use moves between these, one each look (its record changes at every look). */
  oldUses?: string[];
  /** The new key's last use (default null: not seen in use, the gate measures on the workflow's clock). */
  newLastUse?: string;
  /** Hold the notify deploy until this resolves. */
  deployGate: Promise<void> | null;
}

function mocks(w: World) {
  const calls = {
    issue: 0,
    observe: 0,
    deploy: [] as string[],
    revokeOld: [] as Array<{ why: string; expect?: unknown }>,
    revokeNew: 0,
    audits: [] as string[],
  };
  const usage = (keyId: string, lastUsedAt: string | null): KeyUsage => ({
    keyId,
    status: 'active',
    lastUsedAt,
    lastUseKnown: true,
  });
  return {
    calls,
    activities: {
      beginRotation: async () => begunRotation(OLD),
      recordRotation: async (input: { audit?: string }) => {
        if (input.audit) calls.audits.push(input.audit);
      },
      issueTenantKey: async () => {
        calls.issue += 1;
        await paceAfter(calls.issue, PACED_AFTER);
        return w.limit ? AT_LIMIT : ISSUED;
      },
      deployKeyGeneration: async (input: { event: string }) => {
        calls.deploy.push(input.event);
        if (w.deployGate) await w.deployGate;
        return { deployed: true };
      },
      verifyTenantKey: async () => undefined,
      observeKeyUsage: async () => {
        calls.observe += 1;
        await paceAfter(calls.observe, PACED_AFTER);
        const old = w.oldUses ? w.oldUses[calls.observe % w.oldUses.length]! : w.oldLastUse;
        return { [OLD]: usage(OLD, old), [NEW]: usage(NEW, w.newLastUse ?? null) };
      },
      revokeKeyGeneration: async (input: { why: string; expect?: unknown }) => {
        calls.revokeOld.push({ why: input.why, ...(input.expect ? { expect: input.expect } : {}) });
        return { keyId: OLD, result: 'revoked' as const };
      },
      revokeNewGeneration: async () => {
        calls.revokeNew += 1;
        return { revoked: [NEW], refused: false };
      },
    } as never,
  };
}

const tenantStatusOf = async (handle: WorkflowHandle) => (await handle.describe()).searchAttributes['TenantStatus'];
const by = (reason = 'checked with the team') => ({ operator: 'alice', reason });

async function everyRunWithinBound(handle: WorkflowHandle, bound: number): Promise<number> {
  let runs = 0;
  for await (const run of handle.client.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
    runs += 1;
    // A poll adds about a dozen events past the check: the bound holds within one poll.
    expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(bound + 20);
  }
  return runs;
}

function start(
  client: FastWorld['client'],
  taskQueue: string,
  ref: string,
  options: RotateTenantKeyInput['options'],
  extra: Partial<RotateTenantKeyInput> = {},
) {
  return client.workflow.start('rotateTenantKey', {
    taskQueue,
    workflowId: rotationWorkflowId(ref, 'default'),
    args: [{ externalRef: ref, options, ...extra } satisfies RotateTenantKeyInput],
  });
}

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server far
// more than on a CPU (one after the other the file took 90 s under load, its two bound tests 30 s each).
describe.concurrent('rotateTenantKey waits (mocked activities)', () => {
  it('refuses a carried state from a caller: only a run that continues as new may hand one on', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: false, oldLastUse: null, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      // A forged "held, revoke decided" state would skip the issue, the deploy and the quiet gate.
      const forged = { phase: 'held', decision: { kind: 'revoke', by: null } };
      const handle = await start(client, taskQueue, ref, {}, { continued: forged });
      await expect(handle.result()).rejects.toMatchObject({
        // Refused by the run's input check (issue 45), naming the field.
        cause: {
          type: 'INVALID_INPUT',
          message: expect.stringMatching(/continued: set only by a run that continues as new/),
        },
      });
      expect(calls.revokeOld).toEqual([]);
      expect(calls.issue).toBe(0);
    });
  });

  it("takes a decision that comes with the run's first task: its Updates are installed before the input check", async () => {
    // Sent right after a start (or a continue-as-new), before a worker picked the run up: escalateToEmergency
    // applies at `starting`, and must not be refused for want of a handler.
    const { activities } = mocks({ limit: true, oldLastUse: null, deployGate: null });
    await sentWithFirstTask(
      world.client,
      activities,
      (taskQueue) => start(world.client, taskQueue, uniqueId('rot'), {}),
      (handle) => handle.executeUpdate(escalateToEmergencyUpdate, { args: [by('a leak was found')] }),
      async (handle, answer) => {
        expect(answer).toMatchObject({ status: 'fulfilled', value: { stage: 'starting' } });
        expect(await handle.query(rotationStatusQuery)).toMatchObject({ emergency: true });
      },
    );
  });

  it('key_limit: shown with its decisions, bounded across continuations, and a retryKeyCreate after them lands', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: true, oldLastUse: null, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, {
        keyLimitRetryInterval: '1ms',
        pollCeiling: '1ms',
        historyEventBound: BOUND,
        propagationAllowance: '0s',
      });
      await until(() => calls.issue >= 60);
      const wait = await waitForStage(handle, 'key_limit');
      expect(wait.decisions).toEqual(['abortRotation', 'retryKeyCreate', 'escalateToEmergency']);
      expect(wait.waitingFor).toMatch(/active-key limit \(2 active keys: .*key_other.*retryKeyCreate/);
      expect(wait.nextCheckAt).not.toBeNull();
      expect(await tenantStatusOf(handle)).toEqual(['rotation_key_limit']);
      await expectWaitOnEverySurface(client, handle, 'key_limit', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_key_limit',
      });
      // The wait began in the first run and is the same wait in the current one.
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      expect(Date.parse(wait.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      expect(await everyRunWithinBound(handle, BOUND)).toBeGreaterThanOrEqual(3);
      // Audited once however many runs; the status (which keys look unused) carried.
      expect(calls.audits).toEqual(['rotation.key_limit']);
      expect((await handle.query(rotationStatusQuery)).activeKeys?.map((k) => k.looksUnused)).toEqual([false, true]);

      // Not at the gate: revokeAnyway is refused with the reason, and nothing changes.
      await expect(decide(handle, revokeAnywayUpdate, by())).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/is key_limit: revokeAnyway applies at waiting_for_quiet or held/) },
      });
      w.limit = false;
      const answer = await decide(handle, retryKeyCreateUpdate, by('freed a slot'));
      expect(answer.stage).toBe('key_limit');
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'completed', keyId: NEW, revokedKeyId: OLD, toGeneration: 2 });
      expect(calls.deploy).toEqual(['keyRotated']);
      expect(calls.revokeOld).toHaveLength(1);
      expect(await waitOf(handle)).toBeNull();
      expect(await tenantStatusOf(handle)).toEqual(['rotation_completed']);
    });
  }, 120_000);

  it('key_limit: abortRotation after continuations rolls back with nothing deployed', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: true, oldLastUse: null, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, {
        keyLimitRetryInterval: '1ms',
        pollCeiling: '1ms',
        historyEventBound: BOUND,
      });
      await until(() => calls.issue >= 40);
      await until(async () => (await handle.describe()).runId !== handle.firstExecutionRunId);
      await decide(handle, abortRotationUpdate, by('not now'));
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'aborted', keyId: OLD });
      expect(calls.deploy).toEqual([]);
      expect(calls.revokeNew).toBe(1);
      expect(calls.revokeOld).toEqual([]);
    });
  }, 120_000);

  it('deploying: shown while the deployer retries, with the decisions that apply', async () => {
    const ref = uniqueId('rot');
    let release!: () => void;
    const w: World = {
      limit: false,
      oldLastUse: null,
      deployGate: new Promise<void>((r) => (release = r)),
    };
    const { activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, { propagationAllowance: '0s' });
      const wait = await waitForStage(handle, 'deploying');
      expect(wait.waitingFor).toMatch(/deploy through notify/);
      expect(wait.decisions).toEqual(['escalateToEmergency']);
      expect(wait.nextCheckAt).toBeNull();
      expect(await tenantStatusOf(handle)).toEqual(['rotation_deploying']);
      await expectWaitOnEverySurface(client, handle, 'deploying', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_deploying',
      });
      await expect(decide(handle, abortRotationUpdate, by())).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/is deploying: abortRotation applies at key_limit/) },
      });
      release();
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });
    });
  });

  it('cancelled while its deploy is out: the roll-back redeploys the old key before it revokes the new one', async () => {
    // The notice may have reached the parent (the deploy was sent; a cancel does not wait for its answer): consumers
    // may hold the new key, so it is revoked only after the old one is deployed again. Before, the run counted the
    // deploy only once it answered, and revoked the new key with nothing redeployed.
    const ref = uniqueId('rot');
    let release!: () => void;
    const w: World = { limit: false, oldLastUse: null, deployGate: new Promise<void>((r) => (release = r)) };
    const { calls, activities } = mocks(w);
    const order: string[] = [];
    const recording = {
      ...(activities as Record<string, (input: never) => Promise<unknown>>),
      deployKeyGeneration: async (input: { event: string }) => {
        order.push(`deploy ${input.event}`);
        calls.deploy.push(input.event);
        // The new key's notice hangs (sent, never answered); the old key's goes through.
        if (input.event === 'keyRotated') await w.deployGate;
        return { deployed: true };
      },
      revokeNewGeneration: async () => {
        order.push('revoke new');
        calls.revokeNew += 1;
        return { revoked: [NEW], refused: false };
      },
    };
    await world.run(recording as never, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, { propagationAllowance: '0s' });
      await waitForStage(handle, 'deploying');
      await until(async () => calls.deploy.length === 1);
      await handle.cancel();
      await expect(handle.result()).rejects.toMatchObject({ name: 'WorkflowFailedError' });
      expect(order).toEqual(['deploy keyRotated', 'deploy keyRotationAborted', 'revoke new']);
      expect(calls.revokeOld).toEqual([]);
      expect((await handle.query(rotationStatusQuery)).stage).toBe('cancelled');
      // The first notice's answer comes at last (the worker waits for its activities to end).
      release();
    });
  });

  it('quiet gate: passes once the old key shows no use for the quiet period, handing what it saw to the revoke', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: false, oldLastUse: BEFORE_DEPLOY, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, {
        propagationAllowance: '0s',
        quietPeriod: '1s',
        pollInterval: '100ms',
      });
      const wait = await waitForStage(handle, 'waiting_for_quiet');
      expect(wait.decisions).toEqual(['revokeAnyway', 'abortRotation', 'escalateToEmergency']);
      expect(wait.waitingFor).toMatch(/quiet for \d+ of 1000 ms; next look in \d+ ms/);
      expect(await tenantStatusOf(handle)).toEqual(['rotation_waiting_for_quiet']);
      const result = await handle.result();
      expect(result.outcome).toBe('completed');
      expect(result.quietCheck).toMatchObject({ method: 'last-use', lateUseAt: null });
      expect(calls.revokeOld).toEqual([
        {
          why: 'quiet',
          expect: { lastUse: { state: 'seen', at: BEFORE_DEPLOY, field: 'lastUsedAt' }, useCount: null },
        },
      ]);
    });
  });

  it('quiet gate: looks that see nothing new add no event; bounded across continuations while the record keeps changing; a late use holds (no polls while held); revokeAnyway after a continuation lands', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: false, oldLastUse: BEFORE_DEPLOY, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, {
        propagationAllowance: '0s',
        quietPeriod: '1h',
        quietDeadline: '2h',
        pollInterval: '1ms',
        pollCeiling: '1ms',
        historyEventBound: BOUND,
      });
      const waiting = await waitForStage(handle, 'waiting_for_quiet');
      // Nothing changes: the watch looks 30 times as one activity's attempts, adding no event to the run.
      await expectLooksWithoutEvents(handle, () => calls.observe, 30);
      // The new key is seen in use (deploy time on the platform's clock) and the old key's last use moves between
      // two times before it at every look: every look is judged, the run's history grows, and it continues as new.
      const deployedOnPlatform = Date.now();
      w.newLastUse = new Date(deployedOnPlatform).toISOString();
      w.oldUses = [
        new Date(deployedOnPlatform - 2_000).toISOString(),
        new Date(deployedOnPlatform - 1_000).toISOString(),
      ];
      await untilRuns(handle, 3);
      expect(await everyRunWithinBound(handle, BOUND)).toBeGreaterThanOrEqual(3);
      w.oldLastUse = w.oldUses[0]!;
      delete w.oldUses;
      // The same wait since the first run; the gate's memory carried (its polls keep counting).
      await expectSinceCarried(handle, 'waiting_for_quiet', waiting.since);
      await expectWaitOnEverySurface(client, handle, 'waiting_for_quiet', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_waiting_for_quiet',
      });
      const status = await handle.query(rotationStatusQuery);
      expect(status.quietCheck?.polls).toBeGreaterThanOrEqual(60);
      expect(status.deployedAt).not.toBeNull();

      // A use after the allowance, seen in a continued run: a consumer never switched. Held, never revoked.
      w.oldLastUse = new Date(deployedOnPlatform + 5_000).toISOString();
      const held = await waitForStage(handle, 'held');
      expect(held.decisions).toEqual(['revokeAnyway', 'abortRotation', 'escalateToEmergency']);
      expect(held.nextCheckAt).toBeNull();
      expect(held.waitingFor).toMatch(/used at .*after the propagation allowance.*revokeAnyway/);
      expect((await handle.query(rotationStatusQuery)).heldReason).toBe('used_after_allowance');
      expect(await tenantStatusOf(handle)).toEqual(['rotation_held']);
      expect(calls.revokeOld).toEqual([]);
      await expectWaitOnEverySurface(client, handle, 'held', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_held',
      });
      // Held polls nothing: no timer after the look that held it, while only a decision can end it.
      const events = (await handle.fetchHistory()).events ?? [];
      const lastLook = events.map((e) => Boolean(e.activityTaskScheduledEventAttributes)).lastIndexOf(true);
      expect(lastLook).toBeGreaterThan(0);
      expect(events.slice(lastLook).filter((e) => e.timerStartedEventAttributes)).toEqual([]);
      expect(calls.audits).toEqual(['rotation.held']);

      // A decision that does not apply is refused with the reason; one that does lands.
      await expect(decide(handle, retryKeyCreateUpdate, by())).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/is held: retryKeyCreate applies at key_limit/) },
      });
      await expect(decide(handle, revokeAnywayUpdate, by(''))).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/reason/) },
      });
      const answer = await decide(handle, revokeAnywayUpdate, by('consumer confirmed gone'));
      expect(answer).toMatchObject({ stage: 'held', effect: 'the old key is revoked now' });
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'completed' });
      expect(calls.revokeOld).toEqual([{ why: 'revoked anyway by alice: consumer confirmed gone' }]);
      await expect(decide(handle, abortRotationUpdate, by())).rejects.toThrow();
    });
  }, 120_000);

  it('held: continues as new past the bound when signals fill its history, and an abort after that lands', async () => {
    const ref = uniqueId('rot');
    const w: World = { limit: false, oldLastUse: BEFORE_DEPLOY, deployGate: null };
    const { calls, activities } = mocks(w);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, ref, {
        propagationAllowance: '0s',
        quietPeriod: '1h',
        quietDeadline: '1ms',
        pollInterval: '1ms',
        historyEventBound: BOUND,
      });
      await waitForStage(handle, 'held');
      const heldRun = (await handle.describe()).runId;
      // Signals no handler takes (the pre-1.0 decision signals are gone) still add events: the held run re-checks
      // its history and continues as new past the bound, held as before. Sent until it has (2 x BOUND at most).
      await signalUntilContinued(
        handle,
        heldRun,
        () => handle.signal('revokeAnyway', { operator: '', reason: '' }),
        2 * BOUND,
      );
      await until(async () => (await handle.describe()).runId !== heldRun);
      const held = await waitForStage(handle, 'held');
      expect((await handle.query(rotationStatusQuery)).heldReason).toBe('deadline');
      expect(held.decisions).toContain('abortRotation');
      // Signals that arrive while the run continues as new land before it can close: a little more slack.
      await everyRunWithinBound(handle, BOUND + 40);
      await decide(handle, abortRotationUpdate, by('consumer cannot move yet'));
      await expect(handle.result()).resolves.toMatchObject({ outcome: 'aborted', keyId: OLD });
      expect(calls.deploy).toEqual(['keyRotated', 'keyRotationAborted']);
      expect(calls.revokeNew).toBe(1);
      expect(calls.revokeOld).toEqual([]);
    });
  }, 120_000);
});
