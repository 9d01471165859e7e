import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getTenantStatus } from '../../src/client/tenants/tenant-status.js';
import { appendAudit } from '../../src/db/audit-store.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertTenantIfAbsent } from '../../src/db/tenants-store.js';
import { ensureDatabase } from '../../src/infra/database.js';
import { dropDatabase } from '../harness/database.js';

/** `tenantctl status` / `GET /v1/tenants/:ref` from our records: what an operator reads first. */
describe('tenant status from records', () => {
  let pool: Pool;
  const name = `t_status_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    pool = createPool(await ensureDatabase(inject('postgresAdminUrl'), name), { max: 4 });
    await migrate(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await dropDatabase(inject('postgresAdminUrl'), name);
  });

  it('shows the 20 latest audit entries, oldest first, however long the trail', async () => {
    const externalRef = 'status-audit-1';
    await insertTenantIfAbsent(pool, { externalRef, name: 'Audit Co', createIdempotencyKey: 'k-status-audit-1' });
    for (let i = 0; i < 30; i++)
      await appendAudit(pool, { actor: 'test', action: `step.${String(i).padStart(2, '0')}`, externalRef });

    const view = await getTenantStatus({ pool }, externalRef);
    expect(view.recentAudit.map((a) => a.action)).toEqual(
      Array.from({ length: 20 }, (_, i) => `step.${String(i + 10).padStart(2, '0')}`),
    );
    expect(view.record?.status).toBe('creating');
  });

  it('reads every run once: the onboarding and the plan convergence from the last runs, a second slot once named', async () => {
    const externalRef = 'status-reads-1';
    await insertTenantIfAbsent(pool, { externalRef, name: 'Reads Co', createIdempotencyKey: 'k-status-reads-1' });
    await pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
       VALUES ($1, 'web', 1, 'tpo-web-g1-a1', 'creating', 1)`,
      [externalRef],
    );
    const temporal = countingTemporal({ [`onboard:${externalRef}`]: { status: 'active' } });
    const view = await getTenantStatus({ pool, client: temporal.client }, externalRef);

    // Before: the onboarding's run was described twice (the last runs and the onboarding section) and the plan
    // convergence's twice (the last runs, then the plan section, which did not know it had none).
    const repeated = Object.entries(temporal.described).filter(([, times]) => times > 1);
    expect(repeated).toEqual([]);
    expect(Object.keys(temporal.described)).toEqual(
      expect.arrayContaining([`onboard:${externalRef}`, `rotate:${externalRef}:web`, `rotate:${externalRef}:default`]),
    );
    expect(view.onboarding).toEqual({ workflowId: `onboard:${externalRef}`, runStatus: 'COMPLETED', progress: null });
    expect(view.lastRuns.map((r) => [r.kind, r.outcome])).toEqual([['onboard', 'active']]);
    expect(view.plan).toEqual({ on: null, convergence: null });
    expect(view.keys.map((k) => k.slot)).toEqual(['web']);
  });
});

/**
 * A Temporal client for the status read that knows only `completed` (workflow id -> result) and counts the describes
 * of every workflow id; every other id has no run, and no top-up is listed.
 */
function countingTemporal(completed: Record<string, unknown>) {
  const described: Record<string, number> = {};
  const handle = (workflowId: string) => ({
    workflowId,
    describe: async () => {
      described[workflowId] = (described[workflowId] ?? 0) + 1;
      if (!(workflowId in completed)) throw new WorkflowNotFoundError('no run', workflowId, undefined);
      const at = new Date('2026-11-29T10:00:00Z');
      return { runId: 'r1', type: 'onboardTenant', status: { name: 'COMPLETED' }, startTime: at, closeTime: at };
    },
    result: async () => completed[workflowId],
    query: async () => null,
  });
  const client = {
    workflow: {
      getHandle: handle,
      list: async function* () {},
    },
  } as unknown as Client;
  return { client, described };
}
