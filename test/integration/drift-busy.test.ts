import { randomBytes } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFindings } from '../../src/db/drift-findings-store.js';
import { startKeyIssue, startKeyRevoke } from '../../src/client/keys/key-slots.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';

/**
 * A drift check never judges a tenant while a workflow works on it: whichever workflow that is, it carries the
 * tenant's TenantExternalRef, and that is what makes the tenant busy (no list of workflow types to keep up to date:
 * the key-slot and top-up workflows came after such a list and were missing from it).
 */
const s = randomBytes(3).toString('hex');
const ref = (name: string) => `db${s}-${name}`;

describe('drift check of a tenant with a workflow running on it', () => {
  let env: DriftEnv;

  beforeAll(async () => {
    env = await createDriftEnv('drift-busy', { policies: { key_orphan: 'fix', key_revoked_on_platform: 'fix' } });
  }, 120_000);
  afterAll(async () => {
    await env?.close();
  });

  /** Until visibility lists the run under the tenant's ref (a check reads visibility, which lags a start). */
  async function untilVisible(externalRef: string, workflowType: string): Promise<void> {
    const query = `TenantExternalRef = "${externalRef}" AND WorkflowType = "${workflowType}" AND ExecutionStatus = "Running"`;
    for (let i = 0; i < 100; i++) {
      if ((await env.client.workflow.count(query)).count > 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no running ${workflowType} of ${externalRef} in visibility`);
  }

  async function expectSkipped(externalRef: string, workflowType: string, handle: WorkflowHandle): Promise<void> {
    try {
      await untilVisible(externalRef, workflowType);
      const result = await env.check({ externalRef });
      expect(result.totals).toMatchObject({ skipped: 1, tenantsChecked: 0 });
      expect(result.skipped).toEqual([{ externalRef, reason: expect.stringContaining(`${workflowType} running`) }]);
      expect(await listFindings(env.pool, { externalRef })).toEqual([]);
    } finally {
      await handle.terminate('test over');
    }
  }

  it('skips a tenant whose key revoke waits at the quiet gate', async () => {
    await env.onboard(ref('revoke'));
    const issued = await startKeyIssue(
      { client: env.client, pool: env.pool },
      { externalRef: ref('revoke'), slot: 'ci' },
      { taskQueue: env.taskQueue },
    );
    await issued.result();
    const revoke = await startKeyRevoke(
      { client: env.client, pool: env.pool },
      { externalRef: ref('revoke'), slot: 'ci', options: { quietPeriod: '1h', pollInterval: '1h' } },
      { taskQueue: env.taskQueue },
    );
    await expectSkipped(ref('revoke'), 'revokeTenantKeySlot', revoke);
  }, 60_000);

  it('skips a tenant whose top-up waits for parent funds', async () => {
    await env.onboard(ref('topup'));
    const topUp = await startTopUp(
      env.client,
      { externalRef: ref('topup'), idempotencyKey: `busy-${s}`, amountMicroUsd: '9999999999', reason: 'drift test' },
      { taskQueue: env.taskQueue },
    );
    await expectSkipped(ref('topup'), 'fundTenant', topUp);
  }, 60_000);
});
