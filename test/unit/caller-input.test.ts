import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { startKeyIssue, startKeyRevoke } from '../../src/client/keys/key-slots.js';
import { startParentKeyRotation } from '../../src/client/parent-key/parent-key.js';
import { scheduleFleetRotation, scheduleTenantRotation } from '../../src/client/keys/rotation-schedules.js';
import { scheduleAutoTopUp } from '../../src/client/money/auto-top-up-schedule.js';
import { startPlanRollout } from '../../src/client/plans/plan-rollout.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { startAdoption, startRotation } from '../../src/client/keys/start-rotation.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';

/**
 * `continued` is the state a run hands to its next run when it continues as new (workflows/waits.ts). A caller
 * that sets it would skip the run's own checks (a forged "held, revoke decided" rotation, a top-up whose intent
 * was never recorded): every starter the gateway, tenantctl and schedules use refuses it, naming the field,
 * before it touches Temporal or the database.
 */
const untouched = new Proxy(
  {},
  {
    get() {
      throw new Error('the starter touched Temporal or the database before refusing');
    },
  },
) as never;

const carried = { continued: { phase: 'quiet', revokeBy: { operator: 'mallory', reason: 'x' } } };

const starters: Array<[string, () => Promise<unknown>]> = [
  ['onboard', () => startOnboarding(untouched as Client, { externalRef: 't-1', name: 'T', ...carried })],
  [
    'top-up',
    () =>
      startTopUp(untouched as Client, { externalRef: 't-1', amountMicroUsd: '1', idempotencyKey: 'k-1', ...carried }),
  ],
  ['rotate', () => startRotation(untouched as Client, { externalRef: 't-1', ...carried }, { taskQueue: 'q' })],
  [
    'rotation schedule',
    () =>
      scheduleTenantRotation(untouched as Client, { externalRef: 't-1', ...carried } as never, { every: '30d' }, 'q'),
  ],
  [
    'adopt',
    () => startAdoption({ client: untouched, db: untouched }, { externalRef: 't-1', ...carried }, { taskQueue: 'q' }),
  ],
  ['close', () => startLifecycle(untouched as Client, 'close', { externalRef: 't-1', reason: 'gone', ...carried })],
  [
    'key issue',
    () =>
      startKeyIssue(
        { client: untouched, pool: untouched },
        { externalRef: 't-1', slot: 'ci', ...carried },
        { taskQueue: 'q' },
      ),
  ],
  [
    'key revoke',
    () =>
      startKeyRevoke(
        { client: untouched, pool: untouched },
        { externalRef: 't-1', slot: 'ci', ...carried },
        { taskQueue: 'q' },
      ),
  ],
  ['parent key rotation', () => startParentKeyRotation(untouched as Client, { ...carried }, { taskQueue: 'q' })],
];

describe("a caller's continued state", () => {
  it.each(starters)('%s: refused before anything starts, naming the field', async (_, start) => {
    const error = await start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems).toEqual([
      'continued: set only by a run that continues as new, never by a caller',
    ]);
  });
});

/**
 * A fleet run's cursor (`after`) and totals are what it hands to its next run: a schedule made with `after: "zzz"`
 * skipped every tenant before "zzz" in every run. The starters refuse them as they refuse `continued`; so does an
 * admin's `closeSooner`, which only the server's starter seals.
 */
const CARRIED = 'set only by a run that continues as new, never by a caller';
const cursors: Array<[string, () => Promise<unknown>, string[]]> = [
  [
    'fleet rotation schedule',
    () =>
      scheduleFleetRotation(
        untouched as Client,
        { after: 'zzz', totals: { started: -5, completed: 0, held: 0, skipped: 0, failed: 0 } },
        { every: '30d' },
        'q',
      ),
    [`after: ${CARRIED}`, `totals: ${CARRIED}`],
  ],
  [
    'auto top-up schedule',
    () => scheduleAutoTopUp(untouched as Client, { after: 'zzz' }, '1h', 'q'),
    [`after: ${CARRIED}`],
  ],
  [
    'plan rollout',
    () => startPlanRollout(untouched as Client, untouched, { plan: 'p', after: 'zzz' }, { actor: 'a', taskQueue: 'q' }),
    [`after: ${CARRIED}`],
  ],
  [
    'close with a grant',
    () => startLifecycle(untouched as Client, 'close', { externalRef: 't-1', reason: 'gone', closeSooner: 'v1.x' }),
    [expect.stringMatching(/^closeSooner: /) as unknown as string],
  ],
];

describe("a caller's cursor, totals and grant", () => {
  it.each(cursors)('%s: refused before anything starts, naming each field', async (_, start, problems) => {
    const error = await start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems).toEqual(problems);
  });
});
