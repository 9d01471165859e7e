import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import type { RotateFleetInput } from '../../src/domain/rotation-input.js';
import { fleetStatusQuery, type FleetTotals } from '../../workflows/keys/rotate-fleet.js';
import { abortRotationUpdate } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { fastWorld, uniqueId, waitForStage, type ActivityMocks, type FastWorld } from '../harness/fast-workflow.js';
import { begunRotation } from '../harness/rotation-begun.js';

/**
 * rotateFleet with mocked activities (its rotateTenantKey / adoptTenantKeys children run on the same mocks): one
 * child per tenant of the page under the slot's business id, the outcomes counted (completed, held at the key limit
 * and no longer counted against the bound, failed, skipped when the slot is already rotating), the next page read
 * after the last ref by continue-as-new with the totals carried, and with `adopt` the adoptable page and
 * adoptTenantKeys children.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const OLD = 'key_old';
const NEW = 'key_new';
const BEFORE = '2026-01-01T00:00:00.000Z';
const usage = (keyId: string, lastUsedAt: string | null): KeyUsage => ({
  keyId,
  status: 'active',
  lastUsedAt,
  lastUseKnown: true,
});
const refused = () => ApplicationFailure.nonRetryable('refused by the test', 'TEST_REFUSED');

/**
 * The child rotation's activities: `fail` refs are refused at begin, `limit` refs stay at the key limit; with
 * `ownSubaccounts` each tenant's sub-account is `sa_<ref>` (else all share `sa_1`).
 */
function rotationMocks(
  fail: Set<string>,
  limit: Set<string>,
  begun: Array<{ externalRef: string; reason: unknown; at?: number }>,
  ownSubaccounts = false,
) {
  return {
    beginRotation: async (input: { externalRef: string; reason: unknown }) => {
      begun.push({ externalRef: input.externalRef, reason: input.reason, at: Date.now() });
      if (fail.has(input.externalRef)) throw refused();
      return begunRotation(OLD, {
        rotationId: `rot_${input.externalRef}`,
        subaccountId: ownSubaccounts ? `sa_${input.externalRef}` : 'sa_1',
      });
    },
    recordRotation: async () => undefined,
    issueTenantKey: async (input: { externalRef: string }) =>
      limit.has(input.externalRef)
        ? {
            state: 'key_limit' as const,
            activeKeys: [{ id: OLD, name: 'default-g1', lastUsedAt: BEFORE, lastUseKnown: true }],
          }
        : { state: 'issued' as const, keyId: NEW, fingerprint: 'fp_new', orphansRevoked: [] },
    deployKeyGeneration: async () => ({ deployed: true }),
    verifyTenantKey: async () => undefined,
    observeKeyUsage: async () => ({ [OLD]: usage(OLD, BEFORE), [NEW]: usage(NEW, null) }),
    revokeKeyGeneration: async () => ({ keyId: OLD, result: 'revoked' as const }),
    revokeNewGeneration: async () => ({ revoked: [NEW], refused: false }),
  };
}

const fast = { propagationAllowance: '0s', quietPeriod: '300ms', pollInterval: '100ms' };

describe('rotateFleet (mocked activities)', () => {
  it('starts one rotation per tenant and counts completed, held, failed and already-rotating (skipped)', async () => {
    const [done, held, failed, busy] = ['done', 'held', 'failed', 'busy'].map((p) => uniqueId(`fleet-${p}`)) as [
      string,
      string,
      string,
      string,
    ];
    const pages: Array<{ after: string | null; limit: number }> = [];
    const begun: Array<{ externalRef: string; reason: unknown }> = [];
    await world.run(
      {
        listActiveTenantsPage: async (input) => {
          pages.push({ after: input.after, limit: input.limit });
          return [done, held, failed, busy];
        },
        ...(rotationMocks(new Set([failed]), new Set([held]), begun) as ActivityMocks),
      },
      async ({ client, taskQueue }) => {
        // The busy tenant's slot is already rotating elsewhere (a run no worker serves).
        const elsewhere = await client.workflow.start('rotateTenantKey', {
          taskQueue: `${taskQueue}-elsewhere`,
          workflowId: rotationWorkflowId(busy, 'default'),
          args: [{ externalRef: busy }],
        });
        try {
          const fleet = await client.workflow.start('rotateFleet', {
            taskQueue,
            workflowId: uniqueId('rotation-fleet'),
            args: [{ concurrency: 2, pageSize: 10, options: fast } satisfies RotateFleetInput],
          });
          const totals: FleetTotals = await fleet.result();
          // The completed one waited out its quiet gate: released, then counted by its settling tell.
          expect(totals).toEqual({ started: 3, completed: 1, held: 1, skipped: 1, failed: 1, waiting: 0 });
          expect(pages).toEqual([{ after: null, limit: 10 }]);
          expect(begun.map((b) => b.externalRef).sort()).toEqual([done, held, failed].sort());
          expect(new Set(begun.map((b) => b.reason))).toEqual(new Set(['fleet rotation']));
          expect(await fleet.query(fleetStatusQuery)).toEqual({ slot: 'default', after: null, running: 0, totals });
          // The held rotation was abandoned to wait for its operator, not ended with the fleet.
          const heldChild = client.workflow.getHandle(rotationWorkflowId(held, 'default'));
          expect((await heldChild.describe()).status.name).toBe('RUNNING');
          await heldChild.terminate('test done');
        } finally {
          await elsewhere.terminate('test done');
        }
      },
    );
  }, 30_000);

  it('reads the next page after the last ref by continue-as-new, carrying the totals', async () => {
    const refs = [uniqueId('fleet-a'), uniqueId('fleet-b'), uniqueId('fleet-c')];
    const pages: Array<{ after: string | null; limit: number }> = [];
    await world.run(
      {
        listActiveTenantsPage: async (input) => {
          pages.push({ after: input.after, limit: input.limit });
          return input.after === null ? refs.slice(0, 2) : input.after === refs[1] ? refs.slice(2) : [];
        },
        ...(rotationMocks(new Set(refs), new Set(), []) as ActivityMocks),
      },
      async ({ client, taskQueue }) => {
        const fleet = await client.workflow.start('rotateFleet', {
          taskQueue,
          workflowId: uniqueId('rotation-fleet'),
          args: [{ pageSize: 2 } satisfies RotateFleetInput],
        });
        expect(await fleet.result()).toEqual({ started: 3, completed: 0, held: 0, skipped: 0, failed: 3 });
        expect(pages).toEqual([
          { after: null, limit: 2 },
          { after: refs[1], limit: 2 },
        ]);
        expect((await fleet.describe()).runId).not.toBe(fleet.firstExecutionRunId);
      },
    );
  }, 30_000);

  it(
    'releases rotations waiting out their quiet gate from the bound: the next ones start at once, and each ' +
      'is counted once when it settles (completed, held, aborted), in whichever run of the fleet is current',
    async () => {
      const refs = ['a', 'b', 'c', 'held', 'abort'].map((p) => uniqueId(`fleet-quiet-${p}`));
      const [, , , heldRef, abortRef] = refs as [string, string, string, string, string];
      const begun: Array<{ externalRef: string; reason: unknown; at?: number }> = [];
      const revokedAt: number[] = [];
      const looks = new Map<string, number>();
      const pages: Array<string | null> = [];
      await world.run(
        {
          listActiveTenantsPage: async (input) => {
            pages.push(input.after);
            const from = input.after === null ? 0 : refs.indexOf(input.after) + 1;
            return refs.slice(from, from + input.limit);
          },
          ...(rotationMocks(new Set(), new Set(), begun, true) as ActivityMocks),
          // Quiet after the quiet period; `held` is used at every look (held: a late use); `abort` shows no
          // last use, so it waits its overlap window until the operator aborts it. The others' looks after their
          // first (the one before they tell the fleet they wait) answer once all five began, or after 15 s: with
          // one rotation at a time, only a fleet that released the waiting ones gets there, whatever the load.
          observeKeyUsage: async (input: { subaccountId: string }) => {
            if (input.subaccountId === `sa_${heldRef}`)
              return { [OLD]: usage(OLD, new Date().toISOString()), [NEW]: usage(NEW, null) };
            if (input.subaccountId === `sa_${abortRef}`)
              return { [OLD]: { ...usage(OLD, null), lastUseKnown: false }, [NEW]: usage(NEW, null) };
            const look = (looks.get(input.subaccountId) ?? 0) + 1;
            looks.set(input.subaccountId, look);
            const deadline = Date.now() + 15_000;
            while (look > 1 && begun.length < refs.length && Date.now() < deadline)
              await new Promise((resolve) => setTimeout(resolve, 50));
            return { [OLD]: usage(OLD, BEFORE), [NEW]: usage(NEW, null) };
          },
          revokeKeyGeneration: async () => {
            revokedAt.push(Date.now());
            return { keyId: OLD, result: 'revoked' as const };
          },
        } as ActivityMocks,
        async ({ client, taskQueue }) => {
          const fleet = await client.workflow.start('rotateFleet', {
            taskQueue,
            workflowId: uniqueId('rotation-fleet'),
            args: [
              {
                concurrency: 1,
                pageSize: 2,
                options: { propagationAllowance: '0s', quietPeriod: '2s', pollInterval: '200ms', overlapWindow: '60s' },
              } satisfies RotateFleetInput,
            ],
          });
          const aborting = client.workflow.getHandle(rotationWorkflowId(abortRef, 'default'));
          await waitForStage(aborting, 'waiting_for_quiet');
          await aborting.executeUpdate(abortRotationUpdate, { args: [{ operator: 'ops', reason: 'fleet test' }] });
          const totals: FleetTotals = await fleet.result();
          expect(totals).toEqual({ started: 5, completed: 3, held: 1, skipped: 0, failed: 1, waiting: 0 });
          // One at a time (concurrency 1), yet every rotation began before the first one's old key was revoked.
          expect(begun).toHaveLength(5);
          expect(revokedAt).toHaveLength(3);
          expect(Math.max(...begun.map((b) => b.at!))).toBeLessThan(Math.min(...revokedAt));
          // Pages of 2 read after the last ref; the last run waited for the released ones to settle.
          expect(pages).toEqual([null, refs[1], refs[3]]);
          const heldChild = client.workflow.getHandle(rotationWorkflowId(heldRef, 'default'));
          expect((await heldChild.describe()).status.name).toBe('RUNNING');
          await heldChild.terminate('test done');
        },
      );
    },
    45_000,
  );

  it('with adopt: reads the adoptable page for the slot and starts adoptTenantKeys children', async () => {
    const ref = uniqueId('fleet-adopt');
    const pages: unknown[] = [];
    const begun: unknown[] = [];
    await world.run(
      {
        listAdoptableTenantsPage: async (input) => {
          pages.push(input);
          return [ref];
        },
        beginAdoption: async (input) => {
          begun.push({ externalRef: input.externalRef, slot: input.slot, reason: input.reason });
          throw refused();
        },
        recordRotation: async () => undefined,
      },
      async ({ client, taskQueue }) => {
        const fleet = await client.workflow.start('rotateFleet', {
          taskQueue,
          workflowId: uniqueId('rotation-fleet'),
          args: [{ slot: 'ci', adopt: true, pageSize: 5 } satisfies RotateFleetInput],
        });
        expect(await fleet.result()).toEqual({ started: 1, completed: 0, held: 0, skipped: 0, failed: 1 });
        expect(pages).toEqual([{ slot: 'ci', after: null, limit: 5 }]);
        expect(begun).toEqual([{ externalRef: ref, slot: 'ci', reason: 'fleet adoption' }]);
        const child = await client.workflow.getHandle(rotationWorkflowId(ref, 'ci')).describe();
        expect(child.type).toBe('adoptTenantKeys');
      },
    );
  }, 30_000);
});
