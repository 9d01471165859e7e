import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import type { DriftPageTenant } from '../../activities/drift/check.js';
import type { RecordTenantDriftResult } from '../../activities/drift/records.js';
import type { ReconcileFleetInput } from '../../src/domain/drift-input.js';
import { driftCheckStatusQuery } from '../../workflows/reconcile-fleet.js';
import { fastWorld, uniqueId, type ActivityMocks, type FastWorld } from '../harness/fast-workflow.js';

/**
 * reconcileFleet with mocked activities: a fleet check begun, the platform listed and unowned sub-accounts recorded
 * once; each page's busy tenants skipped with their reason and never observed; a listed tenant observed (with its
 * projects when its record has ended), an unlisted one recorded with no observation; findings and database fixes
 * counted, a platform fix (orphan key) counted only when revoked; a tenant whose check fails counted and shown; the
 * next page by continue-as-new carrying the check; one tenant's check lists nothing unowned; an unknown tenant is
 * refused at the begin with nothing else called.
 * The fixes listed in the result are carried across continue-as-new with the totals and the skipped sample: a
 * tenant on the first page and one on the last each have one.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const SUMMARY = { openByKind: { orphan_key: 1 }, openTotal: 1, unownedSubaccounts: 0 };
const none: RecordTenantDriftResult = { findings: [], resolved: 0, fixesApplied: [], platformFixes: [] };

function mocks(
  pages: DriftPageTenant[][],
  drift: Record<string, RecordTenantDriftResult>,
  busy: Record<string, string>,
) {
  const calls = {
    begin: [] as unknown[],
    snapshot: 0,
    unowned: 0,
    pages: [] as unknown[],
    busy: [] as unknown[],
    observed: [] as unknown[],
    recorded: [] as Array<Record<string, unknown>>,
    revoked: [] as unknown[],
    finished: [] as unknown[],
  };
  const activities: ActivityMocks = {
    beginDriftCheck: async (input) => {
      calls.begin.push(input);
      if (input.externalRef === 'nobody') throw ApplicationFailure.nonRetryable('no such tenant', 'TENANT_NOT_FOUND');
      return { checkId: '42', schedulesKnown: true, visibility: true };
    },
    snapshotSubaccounts: async () => {
      calls.snapshot += 1;
      return { count: 7, withoutExternalRef: 1 };
    },
    recordUnownedSubaccounts: async () => {
      calls.unowned += 1;
      return { found: 1, resolved: 0 };
    },
    loadDriftPage: async (input) => {
      calls.pages.push(input);
      return pages.shift() ?? [];
    },
    findBusyTenants: async (input) => {
      calls.busy.push(input.tenants.map((t) => t.externalRef));
      return { busy, visibility: true };
    },
    observeTenant: async (input) => {
      calls.observed.push(input);
      if (input.subaccountId === 'sa_broken') throw ApplicationFailure.nonRetryable('refused', 'PLATFORM_REFUSED');
      return { seen: input.subaccountId } as never;
    },
    recordTenantDrift: async (input) => {
      calls.recorded.push(input as unknown as Record<string, unknown>);
      return drift[input.externalRef] ?? none;
    },
    revokeOrphanKey: async (input) => {
      calls.revoked.push(input);
      return input.findingId === 'f1' ? { outcome: 'revoked' } : { outcome: 'no_longer_safe', why: 'used lately' };
    },
    finishDriftCheck: async (input) => {
      calls.finished.push(input);
      return { checkId: input.checkId, scope: 'fleet', ...SUMMARY } as never;
    },
  };
  return { calls, activities };
}

const tenant = (externalRef: string, subaccountId: string | null, status = 'active', listed = true) => ({
  externalRef,
  subaccountId,
  status,
  listed,
});

describe('reconcileFleet (mocked activities)', () => {
  it('checks the fleet page by page: busy skipped, findings and fixes counted, a failed check shown', async () => {
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((x) => uniqueId(`drift-${x}`)) as [
      string,
      string,
      string,
      string,
      string,
    ];
    const { calls, activities } = mocks(
      [
        [tenant(d, 'sa_broken'), tenant(b, 'sa_b'), tenant(c, null, 'failed', false)],
        [tenant(a, 'sa_a'), tenant(e, 'sa_e', 'closed')],
      ],
      {
        [c]: {
          findings: [],
          resolved: 0,
          fixesApplied: [{ kind: 'status_mismatch', subject: c, fix: 'mark_failed' as never }],
          platformFixes: [],
        },
        [a]: {
          findings: [
            { kind: 'status_mismatch', subject: a, change: 'opened' },
            { kind: 'orphan_key', subject: 'key_1', change: 'opened' },
          ],
          resolved: 0,
          fixesApplied: [{ kind: 'status_mismatch', subject: a, fix: 'mark_suspended' as never }],
          platformFixes: [
            { findingId: 'f1', kind: 'orphan_key', subject: 'key_1' },
            { findingId: 'f2', kind: 'orphan_key', subject: 'key_2' },
          ],
        },
      },
      { [b]: 'rotateTenantKey running' },
    );
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('reconcileFleet', {
        taskQueue,
        workflowId: uniqueId('drift-check'),
        args: [{ pageSize: 3, options: { quietPeriod: '2s' } } satisfies ReconcileFleetInput],
      });
      const result = await handle.result();
      expect(result).toEqual({
        checkId: '42',
        scope: 'fleet',
        totals: { tenantsChecked: 3, skipped: 1, fixesApplied: 3, findingsSeen: 2, failed: 1 },
        skipped: [
          { externalRef: b, reason: 'rotateTenantKey running' },
          { externalRef: d, reason: 'check failed (PLATFORM_REFUSED)' },
        ],
        fixes: [
          { kind: 'status_mismatch', subject: c, fix: 'mark_failed' },
          { kind: 'status_mismatch', subject: a, fix: 'mark_suspended' },
          { kind: 'orphan_key', subject: 'key_1', fix: 'revoke_orphan_key' },
        ],
        openByKind: SUMMARY.openByKind,
        openTotal: SUMMARY.openTotal,
      });
      expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
      expect(await handle.query(driftCheckStatusQuery)).toMatchObject({ phase: 'finished', after: e });
    });
    expect(calls.begin).toHaveLength(1);
    expect(calls.snapshot).toBe(1);
    expect(calls.unowned).toBe(1);
    expect(calls.pages).toEqual([
      { checkId: '42', externalRef: null, after: null, limit: 3 },
      { checkId: '42', externalRef: null, after: c, limit: 3 },
    ]);
    expect(calls.busy).toEqual([
      [d, b, c],
      [a, e],
    ]);
    // Tenants of one page are checked side by side: compare without their order.
    expect(calls.observed).toHaveLength(3);
    expect(calls.observed).toEqual(
      expect.arrayContaining([
        { subaccountId: 'sa_broken', withProjects: false },
        { subaccountId: 'sa_a', withProjects: false },
        { subaccountId: 'sa_e', withProjects: true },
      ]),
    );
    const recorded = new Map(calls.recorded.map((r) => [r['externalRef'], r]));
    expect([...recorded.keys()].sort()).toEqual([a, c, e].sort());
    expect(recorded.get(c)?.['observation']).toBeNull();
    expect(recorded.get(e)?.['observation']).toEqual({ seen: 'sa_e' });
    expect(recorded.get(a)).toMatchObject({
      checkId: '42',
      observation: { seen: 'sa_a' },
      onboardingProvenIdle: true,
      quietPeriodMs: 2000,
      rotationMaxAgeMs: null,
    });
    expect(calls.revoked).toEqual([
      { findingId: 'f1', quietPeriodMs: 2000 },
      { findingId: 'f2', quietPeriodMs: 2000 },
    ]);
    expect(calls.finished).toEqual([
      { checkId: '42', totals: { tenantsChecked: 3, skipped: 1, fixesApplied: 3, findingsSeen: 2, failed: 1 } },
    ]);
  }, 30_000);

  it("one tenant's check records no unowned sub-accounts and never continues; an unknown tenant is refused", async () => {
    const ref = uniqueId('drift-one');
    const { calls, activities } = mocks([[tenant(ref, 'sa_1')]], {}, {});
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('reconcileFleet', {
        taskQueue,
        workflowId: uniqueId('drift-check'),
        args: [{ externalRef: ref, pageSize: 1 } satisfies ReconcileFleetInput],
      });
      expect(await handle.result()).toMatchObject({
        scope: ref,
        totals: { tenantsChecked: 1, skipped: 0, fixesApplied: 0, findingsSeen: 0, failed: 0 },
      });
      expect((await handle.describe()).runId).toBe(handle.firstExecutionRunId);
      expect(calls.unowned).toBe(0);
      expect(calls.pages).toEqual([{ checkId: '42', externalRef: ref, after: null, limit: 1 }]);

      const refused = await client.workflow.start('reconcileFleet', {
        taskQueue,
        workflowId: uniqueId('drift-check'),
        args: [{ externalRef: 'nobody' } satisfies ReconcileFleetInput],
      });
      await expect(refused.result()).rejects.toMatchObject({ cause: { type: 'TENANT_NOT_FOUND' } });
    });
    expect(calls.begin).toHaveLength(2);
    expect(calls.snapshot).toBe(1);
  }, 30_000);
});
