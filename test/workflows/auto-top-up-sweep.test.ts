import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import type { AutoTopUpPage } from '../../activities/auto-top-up.js';
import type { AutoTopUpSweepInput } from '../../src/domain/funding-policy-input.js';
import { topUpWorkflowId } from '../../src/domain/ids.js';
import { fastWorld, uniqueId, type ActivityMocks, type FastWorld } from '../harness/fast-workflow.js';

/**
 * autoTopUpSweep with mocked activities (its fundTenant children run on the same mocks, refused by the caps in
 * their first step): each policy tenant's wallet read; a tenant below its threshold topped up to `to` by a
 * fundTenant under a key from the read's time; one at or above it left alone; an unreadable wallet counted; a
 * top-up of the parent's refused amount or more left waiting (parentShort); a top-up already running not doubled;
 * nothing read while the parent is short for every amount; the next page by continue-as-new with totals carried.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const READ_AT = '2026-11-26T01:02:03.000Z';
const KEY = 'auto-20261126010203000';

function mocks(pages: AutoTopUpPage[], balances: Record<string, string | null | 'refused'>) {
  const calls = { pages: [] as unknown[], reads: [] as string[], topUps: [] as Array<Record<string, unknown>> };
  const activities: ActivityMocks = {
    listAutoTopUpPage: async (input) => {
      calls.pages.push(input);
      return pages.shift() ?? { tenants: [], parentInsufficientSince: null };
    },
    readWalletForAutoTopUp: async (input) => {
      calls.reads.push(input.externalRef);
      const balance = balances[input.externalRef];
      if (balance === 'refused') throw ApplicationFailure.nonRetryable('no wallet', 'PLATFORM_REFUSED');
      return { balanceMicroUsd: balance ?? null, readAt: READ_AT };
    },
    recordTopUp: async (input) => {
      calls.topUps.push(input as unknown as Record<string, unknown>);
      return { state: 'cap_refused', cap: 'daily' } as never;
    },
  };
  return { calls, activities };
}

const policy = (externalRef: string, below: string, to: string) => ({
  externalRef,
  subaccountId: `sa_${externalRef}`,
  below,
  to,
});

describe('autoTopUpSweep (mocked activities)', () => {
  it('tops up who is below the threshold, except unreadable, parent-short and already running top-ups', async () => {
    const [low, fine, broken, blank, big, running] = ['low', 'fine', 'broken', 'blank', 'big', 'running'].map((x) =>
      uniqueId(`top-${x}`),
    ) as [string, string, string, string, string, string];
    const { calls, activities } = mocks(
      [
        {
          tenants: [
            policy(low, '500', '1000'),
            policy(fine, '500', '1000'),
            policy(broken, '500', '1000'),
            policy(blank, '500', '1000'),
            policy(big, '500', '1000'),
            policy(running, '500', '600'),
          ],
          parentInsufficientSince: null,
          parentRefusedMicroUsd: '800',
        },
      ],
      { [low]: '300', [fine]: '500', [broken]: 'refused', [blank]: null, [big]: '0', [running]: '0' },
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      // The running tenant's top-up of this read is already under way (a run no worker serves).
      const elsewhere = await client.workflow.start('fundTenant', {
        taskQueue: `${taskQueue}-elsewhere`,
        workflowId: topUpWorkflowId(running, KEY),
        args: [{}],
      });
      try {
        const result = await client.workflow.execute('autoTopUpSweep', {
          taskQueue,
          workflowId: uniqueId('auto-top-up'),
          args: [{ pageSize: 10, options: { balanceRetryInterval: '1m' } } satisfies AutoTopUpSweepInput],
        });
        expect(result).toEqual({
          read: 4,
          belowThreshold: 3,
          started: 1,
          unreadable: 2,
          parentShort: 1,
          stoppedBy: null,
        });
        const child = client.workflow.getHandle(topUpWorkflowId(low, KEY));
        expect((await child.describe()).type).toBe('fundTenant');
        expect(await child.result()).toMatchObject({ state: 'cap_refused', refusedBy: 'daily', amountMicroUsd: '700' });
      } finally {
        await elsewhere.terminate('test done');
      }
    });
    expect(calls.pages).toEqual([{ after: null, limit: 10 }]);
    expect([...calls.reads].sort()).toEqual([low, fine, broken, blank, big, running].sort());
    expect(calls.topUps).toEqual([
      expect.objectContaining({
        externalRef: low,
        idempotencyKey: KEY,
        amountMicroUsd: '700',
        kind: 'auto',
        requestedBy: 'auto-top-up',
        reason: 'balance 300 below 500: up to 1000',
        balanceReadAt: READ_AT,
        options: { balanceRetryInterval: '1m' },
      }),
    ]);
  }, 30_000);

  it('reads nothing while the parent is short for every amount', async () => {
    const { calls, activities } = mocks(
      [{ tenants: [policy(uniqueId('top'), '500', '1000')], parentInsufficientSince: '2026-11-25T00:00:00.000Z' }],
      {},
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('autoTopUpSweep', {
        taskQueue,
        workflowId: uniqueId('auto-top-up'),
        args: [{} satisfies AutoTopUpSweepInput],
      });
      expect(result).toEqual({
        read: 0,
        belowThreshold: 0,
        started: 0,
        unreadable: 0,
        parentShort: 0,
        stoppedBy: 'parent_insufficient',
      });
    });
    expect(calls.pages).toEqual([{ after: null, limit: 100 }]);
    expect(calls.reads).toEqual([]);
    expect(calls.topUps).toEqual([]);
  }, 30_000);

  it('reads the next page after the last ref by continue-as-new, carrying the totals', async () => {
    const [first, second] = [uniqueId('top-a'), uniqueId('top-b')];
    const { calls, activities } = mocks(
      [
        { tenants: [policy(first, '500', '1000')], parentInsufficientSince: null },
        { tenants: [policy(second, '500', '1000')], parentInsufficientSince: null },
        { tenants: [], parentInsufficientSince: null },
      ],
      { [first]: '900', [second]: null },
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('autoTopUpSweep', {
        taskQueue,
        workflowId: uniqueId('auto-top-up'),
        args: [{ pageSize: 1 } satisfies AutoTopUpSweepInput],
      });
      expect(await handle.result()).toEqual({
        read: 1,
        belowThreshold: 0,
        started: 0,
        unreadable: 1,
        parentShort: 0,
        stoppedBy: null,
      });
      expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
    });
    expect(calls.pages).toEqual([
      { after: null, limit: 1 },
      { after: first, limit: 1 },
      { after: second, limit: 1 },
    ]);
    expect(calls.topUps).toEqual([]);
  }, 30_000);
});
