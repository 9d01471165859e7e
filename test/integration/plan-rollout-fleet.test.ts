/**
 * A plan rollout at fleet scale (issue 33, part 3) on real Temporal, Postgres and the simulator, with the worker
 * as its own process: 200 tenants onboarded on a plan; its next version adds a slot and tightens rotation; a dry
 * run first (nothing written), then the rollout, paused in the middle (nobody new started while paused), its
 * worker killed (SIGKILL) and replaced, resumed: every tenant ends on the new version, each new key is created
 * once, no key is revoked, every slot's schedule runs at the new interval, and the platform saw the rollout
 * within its rate limit (no 429, peak under it). A downgrade retiring a slot whose key is in use holds that
 * tenant, visibly, and finishes the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decideRollout,
  previewPlanRollout,
  rolloutView,
  startPlanRollout,
} from '../../src/client/plans/plan-rollout.js';
import { createPlan, updatePlan } from '../../src/client/plans/plans.js';
import { revealKey } from '../../src/client/keys/reveal-key.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { rotationScheduleId } from '../../src/domain/ids.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import type { RolloutResult } from '../../workflows/plan-rollout-messages.js';
import { spawnCli } from '../harness/cli.js';
import { adminCall } from '../harness/sim-calls.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const TENANTS = 200;
/** The platform's rate limit: the workers' PLATFORM_RATE_LIMIT_PER_SECOND and the simulator's own limit. */
const LIMIT = 40;
const DAY_MS = 24 * 3600 * 1000;

describe('plan rollout across a fleet', () => {
  let env: OrchestratorEnv;
  let worker: ReturnType<typeof spawnCli>;
  const workerEnv = () => ({ ...env.cliEnv, PLATFORM_RATE_LIMIT_PER_SECOND: String(LIMIT) });

  async function startWorker() {
    worker = spawnCli(['worker'], workerEnv());
    await worker.ready;
  }

  beforeAll(async () => {
    env = await createOrchestratorEnv('plan-rollout-fleet');
    await startWorker();
  });
  afterAll(async () => {
    worker?.child.kill('SIGTERM');
    await env?.close();
  });

  async function onboardOnPlan(refs: string[], plan: string): Promise<void> {
    for (let i = 0; i < refs.length; i += 50) {
      const handles = await Promise.all(
        refs
          .slice(i, i + 50)
          .map((ref) =>
            startOnboarding(
              env.client,
              { externalRef: ref, name: `Tenant ${ref}`, plan },
              { taskQueue: env.taskQueue },
            ),
          ),
      );
      await Promise.all(handles.map((h) => h.result()));
    }
  }

  async function onVersion(plan: string, version: number): Promise<number> {
    const { rows } = await env.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM tenants WHERE plan_name = $1::text AND plan_version = $2::int`,
      [plan, version],
    );
    return Number(rows[0]!.n);
  }

  async function until(done: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('rolls a new version out to 200 tenants: dry run, pause, worker kill; each key once, within the rate limit', async () => {
    const refs = Array.from({ length: TENANTS }, (_, i) => `fleet-${String(i).padStart(3, '0')}`);
    await createPlan(
      env.pool,
      { name: 'fleet', keySlots: ['default'], rotation: { interval: '90d' } },
      { actor: 'test' },
    );
    const t0 = Date.now();
    const phase = (what: string) => console.error(`[plan-rollout-fleet] ${what} at ${Date.now() - t0} ms`);
    await onboardOnPlan(refs, 'fleet');
    phase('onboarded');
    expect(await onVersion('fleet', 1)).toBe(TENANTS);
    await updatePlan(
      env.pool,
      'fleet',
      { keySlots: ['default', 'ci'], rotation: { interval: '30d' }, reason: 'a key for CI, rotated monthly' },
      { actor: 'test' },
    );
    const keysBefore = env.sim.state().apiKeys.length;

    // The dry run: every tenant, what would change, and nothing written.
    const preview = await previewPlanRollout(env.pool, { plan: 'fleet', limit: 500 });
    expect(preview.plan).toEqual({ name: 'fleet', version: 2 });
    expect(preview.tenants).toHaveLength(TENANTS);
    for (const tenant of preview.tenants)
      expect(tenant.changes).toEqual({
        slotsRetired: [],
        slotsAdded: ['ci'],
        fundingMicroUsd: null,
        schedulesSet: ['default', 'ci'],
        schedulesRemoved: [],
        policy: 'unchanged',
      });
    expect(env.sim.state().apiKeys).toHaveLength(keysBefore);
    expect(await onVersion('fleet', 1)).toBe(TENANTS);

    // The measured phase: the platform counts from here, under the same limit the workers pace to.
    await adminCall(env.sim, 'POST', '/__sim/traffic', { rateLimitPerSecond: LIMIT });
    const started = await startPlanRollout(
      env.client,
      env.pool,
      { plan: 'fleet', concurrency: 20, pageSize: 50 },
      { actor: 'alice', taskQueue: env.taskQueue },
    );
    expect(started).toMatchObject({ plan: { name: 'fleet', version: 2 }, from: 'fleet', started: true });
    // A second start joins the first.
    const again = await startPlanRollout(
      env.client,
      env.pool,
      { plan: 'fleet' },
      { actor: 'bob', taskQueue: env.taskQueue },
    );
    expect(again).toMatchObject({ workflowId: started.workflowId, started: false });

    phase('rollout started');
    await until(async () => (await onVersion('fleet', 2)) >= 40, '40 tenants on v2');
    phase('40 on v2');
    await decideRollout(env.client, { name: 'fleet', version: 2 }, 'pause', {
      operator: 'alice',
      reason: 'look at the first ones',
    });
    await until(async () => {
      const view = await rolloutView(env.client, { name: 'fleet', version: 2 });
      return view.status !== null && 'running' in view.status && view.status.running === 0;
    }, 'the running tenants to finish');
    const atPause = await onVersion('fleet', 2);
    await new Promise((r) => setTimeout(r, 1500));
    // Paused: nobody new was started.
    expect(await onVersion('fleet', 2)).toBe(atPause);
    const paused = await rolloutView(env.client, { name: 'fleet', version: 2 });
    expect(paused.status).toMatchObject({ stage: 'paused', paused: { by: 'alice', reason: 'look at the first ones' } });

    await decideRollout(env.client, { name: 'fleet', version: 2 }, 'resume', {
      operator: 'alice',
      reason: 'they look right',
    });
    // The worker dies mid-rollout; another takes over.
    await until(async () => (await onVersion('fleet', 2)) >= atPause + 40, '40 more tenants on v2');
    worker.child.kill('SIGKILL');
    await new Promise((r) => worker.child.once('exit', r));
    await startWorker();
    phase('worker replaced');

    const result = (await env.client.workflow.getHandle(started.workflowId).result()) as RolloutResult;
    phase('rollout finished');
    expect(result.totals).toMatchObject({ converged: TENANTS, held: 0, failed: 0 });
    expect(await onVersion('fleet', 2)).toBe(TENANTS);

    const state = env.sim.state();
    const traffic = state.stats;
    // Within the limit: the platform never had to refuse a request, and its busiest second stayed under it.
    expect(traffic.rateLimitedTotal).toBe(0);
    expect(traffic.peakRequestsPerSecond).toBeLessThanOrEqual(LIMIT);
    // Each tenant: its default key and ONE new ci key, both active. A key revoked is only the orphan of an attempt
    // the worker kill cut off between the platform's create and our record (issue 44's fence: the next attempt
    // names its own key and revokes the older attempt's): never used, named by its attempt, and audited as such.
    const revoked = state.apiKeys.filter((k) => k.status === 'revoked');
    for (const key of revoked) {
      expect(key.lastUsedAt, key.id).toBeNull();
      expect(key.name, key.id).toMatch(/^tpo-ci-g1-a\d+$/);
    }
    const { rows: audited } = await env.pool.query<{ subject: string }>(
      `SELECT DISTINCT subject FROM audit_log WHERE action LIKE 'key.%revoked' AND subject = ANY($1::text[])`,
      [revoked.map((k) => k.id)],
    );
    expect(audited.map((r) => r.subject).sort()).toEqual(revoked.map((k) => k.id).sort());
    const bySubaccount = new Map<string, number>();
    for (const key of state.apiKeys.filter((k) => k.status === 'active'))
      if (key.subaccountId) bySubaccount.set(key.subaccountId, (bySubaccount.get(key.subaccountId) ?? 0) + 1);
    const { rows: tenants } = await env.pool.query<{ ref: string; sa: string }>(
      `SELECT external_ref AS ref, subaccount_id AS sa FROM tenants WHERE plan_name = 'fleet'`,
    );
    for (const t of tenants) expect(bySubaccount.get(t.sa), t.ref).toBe(2);
    const { rows: ciKeys } = await env.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM tenant_keys WHERE slot = 'ci' AND status = 'active' AND external_ref LIKE 'fleet-%'`,
    );
    expect(Number(ciKeys[0]!.n)).toBe(TENANTS);
    // Every slot's schedule at the new interval (a sample: the first, the last, one in the middle).
    for (const ref of [refs[0]!, refs[TENANTS / 2]!, refs[TENANTS - 1]!])
      for (const slot of ['default', 'ci']) {
        const described = await env.client.schedule.getHandle(rotationScheduleId(ref, slot)).describe();
        expect(described.spec.intervals?.[0]?.every).toBe(30 * DAY_MS);
      }
    // One tenant.plan_changed per tenant for v2, from v1.
    const { rows: events } = await env.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM event_outbox WHERE type = 'tenant.plan_changed'
          AND payload->'to'->>'name' = 'fleet' AND (payload->'to'->>'version')::int = 2
          AND (payload->'from'->>'version')::int = 1`,
    );
    expect(Number(events[0]!.n)).toBe(TENANTS);
  }, 400_000);

  it('holds a tenant whose retired slot`s key is in use, visibly, and finishes the others', async () => {
    const refs = ['down-a', 'down-b', 'down-c'];
    await createPlan(env.pool, { name: 'down', keySlots: ['default', 'web'] }, { actor: 'test' });
    await onboardOnPlan(refs, 'down');
    await updatePlan(env.pool, 'down', { keySlots: ['default'], reason: 'no web key any more' }, { actor: 'test' });
    // down-b's web key is still used by its consumer.
    const vault = createVault(parseMasterKeys(env.secretsKeys));
    const { token } = await revealKey(
      { pool: env.pool, vault },
      { externalRef: 'down-b', slot: 'web', operator: 'test', reason: 'the consumer holds it' },
    );
    let using = true;
    const consumer = (async () => {
      while (using) {
        await fetch(`${env.sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } })
          .then((r) => r.body?.cancel())
          .catch(() => undefined);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    try {
      const started = await startPlanRollout(
        env.client,
        env.pool,
        {
          plan: 'down',
          options: { quietPeriod: '2s', pollInterval: '300ms', quietDeadline: '20s', overlapWindow: '2s' },
        },
        { actor: 'alice', taskQueue: env.taskQueue },
      );
      const result = (await env.client.workflow.getHandle(started.workflowId).result()) as RolloutResult;
      expect(result.totals).toMatchObject({ converged: 2, held: 1, failed: 0 });
      expect(result.held).toEqual([{ externalRef: 'down-b', reason: expect.stringContaining('slot web') }]);
      // Visible in the rollout's view once it has ended.
      const view = await rolloutView(env.client, { name: 'down', version: 2 });
      expect(view).toMatchObject({ runStatus: 'COMPLETED', status: { held: [{ externalRef: 'down-b' }] } });
    } finally {
      using = false;
      await consumer;
    }
    // The in-use key is still active and the tenant still on v1; the others lost their web key and are on v2.
    const { rows } = await env.pool.query<{ ref: string; version: number; web: string | null }>(
      `SELECT t.external_ref AS ref, t.plan_version AS version,
              (SELECT status FROM tenant_keys k WHERE k.external_ref = t.external_ref AND k.slot = 'web'
                ORDER BY generation DESC LIMIT 1) AS web
         FROM tenants t WHERE t.plan_name = 'down' ORDER BY t.external_ref`,
    );
    expect(rows).toEqual([
      { ref: 'down-a', version: 2, web: 'revoked' },
      { ref: 'down-b', version: 1, web: 'active' },
      { ref: 'down-c', version: 2, web: 'revoked' },
    ]);
  });
});
