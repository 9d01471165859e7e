import { randomBytes } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getTenantStatus } from '../../src/client/tenants/tenant-status.js';
import { appendAudit } from '../../src/db/audit-store.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertTenantIfAbsent, TenantNotFoundError } from '../../src/db/tenants-store.js';
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
    for (const slot of ['web', 'a'])
      await pool.query(
        `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
         VALUES ($1, $2, 1, $3, 'creating', 1)`,
        [externalRef, slot, `tpo-${slot}-g1-a1`],
      );
    const log: string[] = [];
    const temporal = fakeTemporal(log, {
      [`onboard:${externalRef}`]: { result: { status: 'active' } },
      [`key:${externalRef}:web`]: { result: { outcome: 'issued' } },
      [`key:${externalRef}:a`]: { result: { outcome: 'issued' } },
      [`rotate:${externalRef}:default`]: { result: { outcome: 'completed' } },
    });
    const view = await getTenantStatus({ pool: loggedPool(pool, log), client: temporal.client }, externalRef);

    // Before: the onboarding's run was described twice (the last runs and the onboarding section) and the plan
    // convergence's twice (the last runs, then the plan section, which did not know it had none).
    const repeated = Object.entries(temporal.described).filter(([, times]) => times > 1);
    expect(repeated).toEqual([]);
    expect(view.onboarding).toEqual({ workflowId: `onboard:${externalRef}`, runStatus: 'COMPLETED', progress: null });
    // In the view's order: the onboarding, each slot's runs by slot, then the rest.
    expect(view.lastRuns.map((r) => [r.kind, r.slot ?? null, r.outcome])).toEqual([
      ['onboard', null, 'active'],
      ['issue-key', 'a', 'issued'],
      ['rotate', 'default', 'completed'],
      ['issue-key', 'web', 'issued'],
    ]);
    expect(view.plan).toEqual({ on: null, convergence: null });
    expect(view.keys.map((k) => k.slot).sort()).toEqual(['a', 'web']);
    expectRecordsAfterRuns(log);
  });

  it('a running onboarding: its progress, and the records read after every run and query', async () => {
    const externalRef = 'status-reads-2';
    await insertTenantIfAbsent(pool, { externalRef, name: 'Running Co', createIdempotencyKey: 'k-status-reads-2' });
    const log: string[] = [];
    const progress = { stage: 'funding_and_issuing_key' };
    const temporal = fakeTemporal(log, { [`onboard:${externalRef}`]: { running: progress } });
    const view = await getTenantStatus({ pool: loggedPool(pool, log), client: temporal.client }, externalRef);
    expect(view.onboarding).toEqual({ workflowId: `onboard:${externalRef}`, runStatus: 'RUNNING', progress });
    expect(view.lastRuns.map((r) => [r.kind, r.status])).toEqual([['onboard', 'RUNNING']]);
    expect(log).toContain(`query onboard:${externalRef}`);
    expectRecordsAfterRuns(log);
  });

  it('no record and no onboarding: not found, and no record read beyond the tenant`s', async () => {
    const log: string[] = [];
    const temporal = fakeTemporal(log, {});
    await expect(
      getTenantStatus({ pool: loggedPool(pool, log), client: temporal.client }, 'status-nobody'),
    ).rejects.toBeInstanceOf(TenantNotFoundError);
    expect(log.filter((entry) => /^sql .*FROM (transfer_intents|audit_log|key_rotations)/s.test(entry))).toEqual([]);
  });
});

/** Every Temporal call has answered before the records of the answer (transfers, audit, rotations) are asked for. */
function expectRecordsAfterRuns(log: readonly string[]): void {
  const lastTemporal = Math.max(...log.flatMap((entry, at) => (entry.startsWith('sql ') ? [] : [at])));
  const records = log.flatMap((entry, at) =>
    /^sql .*FROM (transfer_intents|audit_log|key_rotations)/s.test(entry) ? [at] : [],
  );
  expect(records.length).toBeGreaterThanOrEqual(3);
  expect(Math.min(...records)).toBeGreaterThan(lastTemporal);
}

/** The pool, logging each statement's text into `log` as it is sent. */
function loggedPool(pool: Pool, log: string[]): Pool {
  return new Proxy(pool, {
    get(target, name, receiver) {
      if (name !== 'query') return Reflect.get(target, name, receiver) as unknown;
      return (config: string | { text: string }, ...rest: unknown[]) => {
        log.push(`sql ${typeof config === 'string' ? config : config.text}`);
        return (target.query as (...args: unknown[]) => unknown)(config, ...rest);
      };
    },
  });
}

/** A Temporal call's answer, a few milliseconds after it was asked, logged when it comes (not when it is asked). */
async function answered(log: string[], call: string): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 5));
  log.push(call);
}

/**
 * A Temporal client for the status read that knows only `runs` (workflow id -> its result when completed, or its
 * query answer while running), counts the describes of every workflow id and logs every answer into `log`; every
 * other id has no run, and no top-up is listed.
 */
function fakeTemporal(log: string[], runs: Record<string, { result: unknown } | { running: unknown }>) {
  const described: Record<string, number> = {};
  const at = new Date('2026-11-29T10:00:00Z');
  const client = {
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
    workflow: {
      getHandle: (workflowId: string) => ({
        workflowId,
        client,
        describe: async () => {
          await answered(log, `describe ${workflowId}`);
          described[workflowId] = (described[workflowId] ?? 0) + 1;
          const run = runs[workflowId];
          if (!run) throw new WorkflowNotFoundError('no run', workflowId, undefined);
          return 'running' in run
            ? { runId: 'r1', type: 'any', status: { name: 'RUNNING' }, startTime: at }
            : { runId: 'r1', type: 'any', status: { name: 'COMPLETED' }, startTime: at, closeTime: at };
        },
        result: async () => {
          await answered(log, `result ${workflowId}`);
          const run = runs[workflowId];
          return run && 'result' in run ? run.result : undefined;
        },
        query: async (query: { name: string }) => {
          await answered(log, `query ${workflowId}`);
          const run = runs[workflowId];
          return query.name === 'currentWait' || !run || !('running' in run) ? null : run.running;
        },
      }),
      list: async function* () {
        await answered(log, 'list');
        yield* [];
      },
    },
  } as unknown as Client;
  return { client, described };
}
