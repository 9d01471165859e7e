import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAuditForTenant } from '../../src/db/audit-store.js';
import { createHarnessActivities } from '../harness/harness-activities.js';
import { createTestContext, type TestContext } from '../harness/context.js';

describe('test harness', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext('harness');
  });
  afterAll(async () => ctx?.close());

  it('runs a workflow whose activity writes through the db layer, and the row reads back', async () => {
    await ctx.startWorker(createHarnessActivities({ pool: ctx.pool }));
    const marker = `ping-${randomUUID()}`;
    const workflowId = `harness-${marker}`;
    const result = await ctx.client.workflow.execute('harnessPing', {
      taskQueue: ctx.taskQueue,
      workflowId,
      args: [{ marker }],
    });
    expect(result).toEqual({ recorded: marker });
    const { rows } = await ctx.pool.query(
      'SELECT action, subject, workflow_id FROM audit_log WHERE subject = $1::text',
      [marker],
    );
    expect(rows).toEqual([{ action: 'harness.ping', subject: marker, workflow_id: workflowId }]);
    expect(await listAuditForTenant(ctx.pool, 'nobody')).toEqual([]);
  });

  it('gives each test file a migrated database of its own', async () => {
    const { rows } = await ctx.pool.query<{ db: string; version: number }>(
      'SELECT current_database() AS db, (SELECT max(version) FROM schema_migrations)::int AS version',
    );
    expect(rows[0]!.db).toMatch(/^t_harness_/);
    expect(rows[0]!.version).toBeGreaterThanOrEqual(1);
  });

  it('refuses to change the append-only audit log', async () => {
    await ctx.pool.query(`INSERT INTO audit_log (actor, action) VALUES ('test', 'x')`);
    await expect(ctx.pool.query('DELETE FROM audit_log')).rejects.toThrow(/append-only/);
    await expect(ctx.pool.query(`UPDATE audit_log SET action = 'y'`)).rejects.toThrow(/append-only/);
  });
});
