import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { AdoptTenantKeysInput } from '../../src/domain/import-input.js';
import { adoptionStatusQuery } from '../../workflows/keys/adopt-tenant-keys-messages.js';
import {
  abortRotationUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
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
import { expectWaitOnEverySurface } from '../harness/wait-surfaces.js';
import { sentWithFirstTask } from '../harness/first-task.js';

/**
 * adoptTenantKeys' waits with mocked activities: key_limit, deploying, waiting_for_quiet and held on currentWait
 * (with the decisions that apply) and TenantStatus; bounded across continuations; decisions landing after one.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const BOUND = 200;
/** The polls a test waits for (about 120 at most) and some: slower after them (paceAfter). */
const PACED_AFTER = 150;
const NEW = 'key_managed';
const UNMANAGED = ['key_u1', 'key_u2'];
const BEFORE = '2026-01-01T00:00:00.000Z';

interface World {
  limit: boolean;
  /** Each unmanaged key's last use as the platform shows it. */
  lastUse: Record<string, string | null>;
  /** When set, key_u1's last use moves between these, one each look (its record changes at every look). */
  u1Uses?: string[];
  /** The managed key's last use (default null: not seen in use, the gate measures on the workflow's clock). */
  newLastUse?: string;
  deployGate: Promise<void> | null;
}

function mocks(w: World) {
  const calls = {
    issue: 0,
    observe: 0,
    deploy: 0,
    revoked: [] as Array<{ keyId: string; why: string }>,
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
      beginAdoption: async () => ({
        rotationId: 'rot_a',
        subaccountId: 'sa_1',
        fromGeneration: 0,
        toGeneration: 1,
        issue: true,
        managedKey: null,
        unmanaged: UNMANAGED.map((keyId) => ({ keyId, generation: 0 })),
        deployer: { kind: 'notify' as const },
        takenOver: false,
      }),
      recordRotation: async (input: { audit?: string }) => {
        if (input.audit) calls.audits.push(input.audit);
      },
      issueTenantKey: async () => {
        calls.issue += 1;
        await paceAfter(calls.issue, PACED_AFTER);
        return w.limit
          ? {
              state: 'key_limit' as const,
              activeKeys: UNMANAGED.map((id) => ({ id, name: null, lastUsedAt: BEFORE, lastUseKnown: true })),
            }
          : { state: 'issued' as const, keyId: NEW, fingerprint: 'fp_m', orphansRevoked: [] };
      },
      deployKeyGeneration: async () => {
        calls.deploy += 1;
        if (w.deployGate) await w.deployGate;
        return { deployed: true };
      },
      verifyTenantKey: async () => undefined,
      observeKeyUsage: async () => {
        calls.observe += 1;
        await paceAfter(calls.observe, PACED_AFTER);
        return {
          ...Object.fromEntries(UNMANAGED.map((id) => [id, usage(id, w.lastUse[id] ?? null)])),
          ...(w.u1Uses ? { key_u1: usage('key_u1', w.u1Uses[calls.observe % w.u1Uses.length]!) } : {}),
          [NEW]: usage(NEW, w.newLastUse ?? null),
        };
      },
      revokeUnmanagedKey: async (input: { keyId: string; why: string }) => {
        calls.revoked.push({ keyId: input.keyId, why: input.why });
        return { result: 'revoked' as const };
      },
      revokeKeyGeneration: async () => ({ keyId: NEW, result: 'revoked' as const }),
    } as never,
  };
}

const tenantStatusOf = async (handle: WorkflowHandle) => (await handle.describe()).searchAttributes['TenantStatus'];
const by = (reason = 'checked with the team') => ({ operator: 'alice', reason });

async function everyRunWithinBound(handle: WorkflowHandle, bound: number): Promise<number> {
  let runs = 0;
  for await (const run of handle.client.list({ query: `WorkflowId = '${handle.workflowId}'` })) {
    runs += 1;
    expect(await historyLength(handle, run.runId)).toBeLessThanOrEqual(bound + 20);
  }
  return runs;
}

function start(client: FastWorld['client'], taskQueue: string, ref: string, options: AdoptTenantKeysInput['options']) {
  return client.workflow.start('adoptTenantKeys', {
    taskQueue,
    workflowId: rotationWorkflowId(ref, 'default'),
    args: [{ externalRef: ref, options } satisfies AdoptTenantKeysInput],
  });
}

// Concurrent: each test has its own task queue, workers, mocks and workflow id, and waits on the dev server far
// more than on a CPU.
describe.concurrent('adoptTenantKeys waits (mocked activities)', () => {
  it('cancelled while its deploy is out: the managed key stays (consumers may hold it), nothing is revoked', async () => {
    // Before, the run counted the deploy only once it answered, and revoked a managed key its notice may have
    // handed out already.
    let release!: () => void;
    const w: World = { limit: false, lastUse: {}, deployGate: new Promise<void>((r) => (release = r)) };
    const { calls, activities } = mocks(w);
    const revokedGenerations: number[] = [];
    const recording = {
      ...(activities as Record<string, (input: never) => Promise<unknown>>),
      revokeKeyGeneration: async (input: { generation: number }) => {
        revokedGenerations.push(input.generation);
        return { keyId: NEW, result: 'revoked' as const };
      },
    };
    await world.run(recording as never, async ({ client, taskQueue }) => {
      const handle = await start(client, taskQueue, uniqueId('adopt'), { propagationAllowance: '0s' });
      await waitForStage(handle, 'deploying');
      await until(async () => calls.deploy === 1);
      await handle.cancel();
      await expect(handle.result()).rejects.toMatchObject({ name: 'WorkflowFailedError' });
      expect(revokedGenerations).toEqual([]);
      expect(calls.revoked).toEqual([]);
      expect((await handle.query(adoptionStatusQuery)).stage).toBe('cancelled');
      release();
    });
  });

  it("answers a decision that comes with the run's first task with its own refusal, not a missing handler", async () => {
    const { activities } = mocks({ limit: true, lastUse: {}, deployGate: null });
    await sentWithFirstTask(
      world.client,
      activities,
      (taskQueue) => start(world.client, taskQueue, uniqueId('adopt'), {}),
      (handle) => handle.executeUpdate(abortRotationUpdate, { args: [by()] }),
      async (_handle, answer) => {
        expect(answer).toMatchObject({
          status: 'rejected',
          reason: { cause: { message: expect.stringMatching(/is starting: abortRotation applies while it waits/) } },
        });
      },
    );
  });

  it('key_limit: shown, bounded across continuations, retryKeyCreate after them lands; deploying shown; quiet keys revoked', async () => {
    const ref = uniqueId('adopt');
    let release!: () => void;
    const w: World = { limit: true, lastUse: {}, deployGate: new Promise<void>((r) => (release = r)) };
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
      expect(wait.decisions).toEqual(['abortRotation', 'retryKeyCreate']);
      expect(wait.waitingFor).toMatch(/active-key limit \(2 active keys: key_u1, key_u2\).*retryKeyCreate/);
      expect(await tenantStatusOf(handle)).toEqual(['rotation_key_limit']);
      await expectWaitOnEverySurface(client, handle, 'key_limit', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_key_limit',
      });
      const first = await client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId).describe();
      expect(first.status.name).toBe('CONTINUED_AS_NEW');
      expect(Date.parse(wait.since)).toBeLessThanOrEqual(first.closeTime!.getTime());
      expect(await everyRunWithinBound(handle, BOUND)).toBeGreaterThanOrEqual(3);
      await expect(decide(handle, revokeAnywayUpdate, by())).rejects.toMatchObject({
        cause: {
          message: expect.stringMatching(/is key_limit: revokeAnyway applies while it waits for quiet or is held/),
        },
      });

      // The limit lifts once the decision is taken (lifted before, a 1 ms poll could leave key_limit first).
      await decide(handle, retryKeyCreateUpdate, by('freed one'));
      w.limit = false;
      const deploying = await waitForStage(handle, 'deploying');
      expect(deploying.decisions).toEqual([]);
      expect(deploying.waitingFor).toMatch(/deploy through notify/);
      await expectWaitOnEverySurface(client, handle, 'deploying', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_deploying',
      });
      release();
      await expect(handle.result()).resolves.toMatchObject({
        outcome: 'completed',
        keyId: NEW,
        revoked: UNMANAGED,
        kept: [],
      });
      expect(calls.revoked.map((r) => r.why)).toEqual(['quiet', 'quiet']);
      expect(await waitOf(handle)).toBeNull();
      expect(await tenantStatusOf(handle)).toEqual(['rotation_completed']);
    });
  }, 240_000);

  it('quiet gate: looks that see nothing new add no event; bounded across continuations while a record keeps changing; a late use holds one key (no timer while held), abort after a continuation keeps it', async () => {
    const ref = uniqueId('adopt');
    const w: World = { limit: false, lastUse: { key_u1: BEFORE, key_u2: null }, deployGate: null };
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
      expect(waiting.decisions).toEqual(['revokeAnyway', 'abortRotation']);
      expect(await tenantStatusOf(handle)).toEqual(['rotation_waiting_for_quiet']);
      // Nothing changes: the watch looks 30 times as one activity's attempts, adding no event to the run.
      await expectLooksWithoutEvents(handle, () => calls.observe, 30);
      // The managed key is seen in use (deploy time on the platform's clock) and key_u1's last use moves between two
      // times before it at every look: every look is judged, the run's history grows, and it continues as new.
      const deployedOnPlatform = Date.now();
      w.newLastUse = new Date(deployedOnPlatform).toISOString();
      w.u1Uses = [
        new Date(deployedOnPlatform - 2_000).toISOString(),
        new Date(deployedOnPlatform - 1_000).toISOString(),
      ];
      await untilRuns(handle, 3);
      expect(await everyRunWithinBound(handle, BOUND)).toBeGreaterThanOrEqual(3);
      w.lastUse.key_u1 = w.u1Uses[0]!;
      delete w.u1Uses;
      await expectSinceCarried(handle, 'waiting_for_quiet', waiting.since);
      await expectWaitOnEverySurface(client, handle, 'waiting_for_quiet', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_waiting_for_quiet',
      });
      // The never-used key went at the first look; the used one waits for its quiet period.
      expect(calls.revoked).toEqual([{ keyId: 'key_u2', why: 'quiet' }]);
      const status = await handle.query(adoptionStatusQuery);
      expect(status.keys.map((k) => k.state)).toEqual(['waiting', 'revoked']);
      expect(status.keys[0]!.quietCheck!.polls).toBeGreaterThanOrEqual(60);

      w.lastUse.key_u1 = new Date(deployedOnPlatform + 5_000).toISOString();
      const held = await waitForStage(handle, 'held');
      expect(held.decisions).toEqual(['revokeAnyway', 'abortRotation']);
      expect(held.nextCheckAt).toBeNull();
      expect(held.waitingFor).toMatch(/key_u1 \(used_after_allowance\)/);
      expect(await tenantStatusOf(handle)).toEqual(['rotation_held']);
      await expectWaitOnEverySurface(client, handle, 'held', {
        externalRef: ref,
        slot: 'default',
        tenantStatus: 'rotation_held',
      });
      const events = (await handle.fetchHistory()).events ?? [];
      const lastLook = events.map((e) => Boolean(e.activityTaskScheduledEventAttributes)).lastIndexOf(true);
      expect(events.slice(lastLook).filter((e) => e.timerStartedEventAttributes)).toEqual([]);

      await expect(decide(handle, retryKeyCreateUpdate, by())).rejects.toMatchObject({
        cause: { message: expect.stringMatching(/is held: retryKeyCreate applies at key_limit/) },
      });
      // Signals fill the held run's history: it continues as new, still held; the abort lands on the next run.
      const heldRun = (await handle.describe()).runId;
      await signalUntilContinued(
        handle,
        heldRun,
        () => handle.signal('abortRotation', { operator: '', reason: '' }).catch(() => undefined),
        2 * BOUND,
      );
      const looks = calls.observe;
      await until(async () => (await handle.describe()).runId !== heldRun);
      await expectSinceCarried(handle, 'held', held.since);
      const answer = await decide(handle, abortRotationUpdate, by('kept for the batch job'));
      expect(answer.effect).toMatch(/kept/);
      await expect(handle.result()).resolves.toMatchObject({
        outcome: 'aborted',
        revoked: ['key_u2'],
        kept: ['key_u1'],
      });
      expect(calls.observe).toBe(looks);
      expect(calls.audits).toEqual(['rotation.held', 'rotation.aborted']);
    });
  }, 240_000);
});
