import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayEvents, rotateSubscriptionSecret } from '../../src/client/events/events.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { withTransaction } from '../../src/db/pool.js';
import { insertDriftCheck } from '../../src/db/drift-checks-store.js';
import { resolveUnseenOfTenant, upsertFinding } from '../../src/db/drift-findings-store.js';
import { insertRotation } from '../../src/db/key-rotations-store.js';
import { insertFirstPlanVersion } from '../../src/db/plans-store.js';
import { auditFinding } from '../../activities/drift/records.js';
import { EVENT_TYPES, EVENT_TYPES_NOT_YET_EMITTED } from '../../src/domain/events.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { eventually, startEventReceiver, type EventReceiver } from '../harness/event-receiver.js';
import { directActivities, eventRows, startDispatcher, subscribe, vaultOf } from '../harness/events-env.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';
import { adminCall } from '../harness/sim-calls.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '30s', unknownTransferDeadline: '2s' };
const TOKEN = /(?<![A-Za-z0-9])(svsk_|svpk_|sv_|whsec_)[A-Za-z0-9]/;

const onboard = async (env: OrchestratorEnv, externalRef: string, fundingMicroUsd = '3000', options = {}) =>
  startOnboarding(
    env.client,
    { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd, options },
    { taskQueue: env.taskQueue },
  );

const lifecycle = async (env: OrchestratorEnv, action: 'suspend' | 'resume' | 'close', externalRef: string) => {
  const handle = await startLifecycle(
    env.client,
    action,
    { externalRef, reason: `test ${action}`, operator: 'alice', options: { pollInterval: '200ms' } },
    { taskQueue: env.taskQueue },
  );
  return handle.result();
};

/** Asserts that the receiver got each of the events of a tenant in the stream's order, each id at least once. */
function expectInTenantOrder(receiver: EventReceiver, rows: Array<{ id: string; externalRef: string | null }>) {
  const byTenant = new Map<string, string[]>();
  for (const row of rows) {
    const key = row.externalRef ?? '';
    byTenant.set(key, [...(byTenant.get(key) ?? []), `evt_${row.id}`]);
  }
  for (const [tenant, ids] of byTenant) {
    const firstArrival = [
      ...new Set(receiver.accepted.filter((e) => (e.body.tenant ?? '') === tenant).map((e) => e.webhookId)),
    ];
    expect(firstArrival, `order of ${tenant}`).toEqual(ids);
  }
}

describe('lifecycle events', () => {
  let env: OrchestratorEnv;
  let everything: EventReceiver;
  beforeAll(async () => {
    env = await createOrchestratorEnv('events', {}, { events: { lowBalanceMicroUsd: '2000' } });
    await env.startOrchestratorWorker();
    await startDispatcher(env);
    everything = await startEventReceiver();
    await subscribe(env, everything, ['*'], 'all');
  }, 60_000);
  afterAll(async () => {
    await everything?.close();
    await env?.close();
  });

  it('writes each event type once per change, and a Standard Webhooks receiver verifies every delivery', async () => {
    // Onboarded, suspended, resumed, closed.
    await (await onboard(env, 'ev-life')).result();
    await lifecycle(env, 'suspend', 'ev-life');
    await lifecycle(env, 'suspend', 'ev-life'); // already suspended: no second event
    await lifecycle(env, 'resume', 'ev-life');
    await lifecycle(env, 'close', 'ev-life');

    // Onboarded by plan: from no plan to the plan's version, once.
    await insertFirstPlanVersion(env.pool, {
      name: 'ev-basic',
      body: { keySlots: ['default'] },
      createdBy: 'test',
      reason: null,
    });
    const byPlan = { externalRef: 'ev-plan', name: 'Tenant ev-plan', plan: 'ev-basic' };
    await (await startOnboarding(env.client, byPlan, { taskQueue: env.taskQueue, db: env.pool })).result();

    // An onboarding the platform refuses for good.
    await setFaults(env.sim, [
      {
        method: 'POST',
        path: '/subaccounts/create',
        mode: 'error-before-commit',
        status: 422,
        code: 'VALIDATION_ERROR',
      },
    ]);
    await expect((await onboard(env, 'ev-fail')).result()).rejects.toThrow();
    await clearFaults(env.sim);

    // The parent cannot pay: waiting for funds (once, however often it retries), then funded.
    await adminCall(env.sim, 'POST', `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '1' });
    const broke = await onboard(env, 'ev-broke', '5000', { ...FAST, balanceRetryInterval: '300ms' });
    await waitForOnboardingStage(env, 'onboard:ev-broke', 'waiting_for_parent_funds');
    await new Promise((r) => setTimeout(r, 1_000)); // a few refused retries
    await adminCall(env.sim, 'POST', `/__sim/parents/${DEFAULT_PARENT_ID}/balance`, { paidMicroUsd: '100000000' });
    // Refused while a retry is under way (not waiting for funds then): that retry finds the funds.
    await broke
      .executeUpdate('parentFunded', { args: [{ operator: 'carol', reason: 'wired funds' }] })
      .catch(() => undefined);
    await broke.result();

    // A transfer nobody can settle: an operator is asked.
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const needsOp = await onboard(env, 'ev-op', '900', FAST);
    await waitForOnboardingStage(env, 'onboard:ev-op', 'needs_operator');
    await clearFaults(env.sim);
    await needsOp.executeUpdate('resolveTransfer', {
      args: [{ outcome: 'applied', operator: 'bob', reason: 'seen on the wallet' }],
    });
    await needsOp.result();

    // Rotation outcomes, through the activity the rotation workflow records them with (twice: one event).
    const acts = directActivities(env, '2000');
    const rotation = await insertRotation(env.pool, {
      externalRef: 'ev-op',
      slot: 'default',
      fromGeneration: 1,
      toGeneration: 2,
      emergency: false,
      deployer: 'none',
      workflowId: 'rotate:ev-op:default',
      runId: null,
    });
    for (const state of ['key_limit', 'key_limit', 'held', 'held', 'completed'] as const)
      await acts.recordRotation({
        rotationId: rotation.id,
        externalRef: 'ev-op',
        change: { state, stage: state, outcome: state === 'held' ? { heldReason: 'old key in use' } : {} },
      });

    // Drift: a finding opened, seen again (no event), then resolved.
    const checks = [
      await insertDriftCheck(env.pool, { scope: 'ev-op', workflowId: 'drift:tenant:ev-op', schedules: null }),
    ];
    await withTransaction(env.pool, async (tx) => {
      for (let i = 0; i < 2; i++) {
        const { row, change } = await upsertFinding(tx, checks[0]!.id, {
          kind: 'key_orphan',
          subject: 'key-x',
          externalRef: 'ev-op',
          subaccountId: null,
          evidence: { keyId: 'key-x' },
        });
        if (change !== 'seen') await auditFinding(tx, row, 'drift.opened');
      }
    });
    checks.push(
      await insertDriftCheck(env.pool, { scope: 'ev-op', workflowId: 'drift:tenant:ev-op', schedules: null }),
    );
    await withTransaction(env.pool, async (tx) => {
      for (const row of await resolveUnseenOfTenant(tx, 'ev-op', checks[1]!.id))
        await auditFinding(tx, row, 'drift.resolved');
    });

    // Low balance: seen below the default threshold twice (one event), recovered, low again (a second event).
    const { rows: sub } = await env.pool.query<{ id: string }>(
      `SELECT subaccount_id AS id FROM tenants WHERE external_ref = 'ev-op'`,
    );
    for (const _ of [1, 2]) await acts.readWalletForAutoTopUp({ externalRef: 'ev-op', subaccountId: sub[0]!.id });

    const rows = await eventRows(env);
    const count = (type: string, ref?: string) =>
      rows.filter((r) => r.type === type && (ref === undefined || r.externalRef === ref)).length;
    expect(count('tenant.onboarded', 'ev-life')).toBe(1);
    expect(count('tenant.plan_changed', 'ev-plan')).toBe(1);
    const { rows: planChanged } = await env.pool.query(
      `SELECT payload FROM event_outbox WHERE type = 'tenant.plan_changed'`,
    );
    expect(planChanged).toEqual([
      { payload: { externalRef: 'ev-plan', from: null, to: { name: 'ev-basic', version: 1 } } },
    ]);
    expect(count('tenant.suspended', 'ev-life')).toBe(1);
    expect(count('tenant.resumed', 'ev-life')).toBe(1);
    expect(count('tenant.closing', 'ev-life')).toBe(1);
    expect(count('tenant.closed', 'ev-life')).toBe(1);
    expect(count('key.issued', 'ev-life')).toBe(1);
    expect(count('transfer.succeeded', 'ev-life')).toBe(1);
    expect(count('tenant.onboarding_failed', 'ev-fail')).toBe(1);
    expect(count('tenant.onboarded', 'ev-fail')).toBe(0);
    expect(count('tenant.waiting_for_funds', 'ev-broke')).toBe(1);
    expect(count('transfer.succeeded', 'ev-broke')).toBe(1);
    expect(count('transfer.needs_operator', 'ev-op')).toBe(1);
    expect(count('transfer.succeeded', 'ev-op')).toBe(1);
    expect(count('rotation.key_limit', 'ev-op')).toBe(1);
    expect(count('rotation.held', 'ev-op')).toBe(1);
    expect(count('key.rotated', 'ev-op')).toBe(1);
    expect(count('drift.finding_opened', 'ev-op')).toBe(1);
    expect(count('drift.finding_resolved', 'ev-op')).toBe(1);
    expect(count('wallet.low_balance', 'ev-op')).toBe(1);
    // Every type something emits (those declared ahead of their emitter excepted) was emitted above.
    expect(new Set(rows.map((r) => r.type))).toEqual(
      new Set(EVENT_TYPES.filter((type) => !EVENT_TYPES_NOT_YET_EMITTED.includes(type))),
    );

    // Every event reaches the receiver, verified, in each tenant's order.
    await eventually(
      () => {
        const got = new Set(everything.accepted.map((e) => e.webhookId));
        expect(rows.filter((r) => !got.has(`evt_${r.id}`))).toEqual([]);
      },
      60_000,
      'every event delivered',
    );
    expectInTenantOrder(everything, rows);
    for (const received of everything.accepted) {
      expect(received.body.id).toBe(received.webhookId);
      expect(received.raw).not.toMatch(TOKEN);
    }
    const onboarded = everything.accepted.find(
      (e) => e.body.type === 'tenant.onboarded' && e.body.tenant === 'ev-life',
    )!;
    expect(onboarded.body.data).toMatchObject({ externalRef: 'ev-life', status: 'active' });
    const transfer = everything.accepted.find(
      (e) => e.body.type === 'transfer.succeeded' && e.body.tenant === 'ev-life',
    )!;
    expect(transfer.body.data).toMatchObject({ amountMicroUsd: '3000', state: 'succeeded' });
    const issued = everything.accepted.find((e) => e.body.type === 'key.issued' && e.body.tenant === 'ev-life')!;
    expect(issued.body.data['fingerprint']).toEqual(expect.any(String));
    // A delivery's row is settled just after the receiver answered: wait for the last ones.
    await eventually(
      async () => {
        const { rows: states } = await env.pool.query(`SELECT DISTINCT state FROM event_deliveries`);
        expect(states).toEqual([{ state: 'delivered' }]);
      },
      60_000,
      'every delivery row settled as delivered',
    );
  }, 180_000);

  it('writes the activation and key events in the statement of their change, once: a repeated step writes none', async () => {
    const result = await (await onboard(env, 'ev-once')).result();
    const acts = directActivities(env);
    // Repeats, as a retried activity would run them: the tenant is already active, the key already stored.
    await acts.markTenantActive({ externalRef: 'ev-once' });
    const again = await acts.issueTenantKey({
      externalRef: 'ev-once',
      slot: 'default',
      generation: 1,
      subaccountId: result.subaccountId,
    });
    expect(again).toMatchObject({ state: 'issued', keyId: result.keyId });
    const rows = await eventRows(env, 'ev-once');
    expect(rows.map((r) => r.type).sort()).toEqual(['key.issued', 'tenant.onboarded', 'transfer.succeeded']);
    // The stream's numbers have no gap and no repeat.
    expect(rows.map((r) => r.seq)).toEqual(['1', '2', '3']);
    const { rows: payloads } = await env.pool.query<{ type: string; payload: Record<string, unknown> }>(
      `SELECT type, payload FROM event_outbox WHERE external_ref = 'ev-once'`,
    );
    const payloadOf = (type: string) => payloads.find((p) => p.type === type)!.payload;
    expect(payloadOf('tenant.onboarded')).toEqual({
      externalRef: 'ev-once',
      subaccountId: result.subaccountId,
      status: 'active',
    });
    expect(payloadOf('key.issued')).toEqual({
      externalRef: 'ev-once',
      keyId: result.keyId,
      slot: 'default',
      generation: 1,
      fingerprint: result.fingerprint,
    });
  });

  it('replays an event with the same webhook-id and the same body', async () => {
    const [first] = await eventRows(env, 'ev-life');
    const before = everything.accepted.filter((e) => e.webhookId === `evt_${first!.id}`);
    expect(before).toHaveLength(1);
    const { reopened } = await replayEvents(
      { pool: env.pool, client: env.client, taskQueue: env.taskQueue },
      { eventId: `evt_${first!.id}` },
      { policy: { idleFor: '3s', initialInterval: '200ms' } },
    );
    expect(reopened).toBe(1);
    await eventually(() =>
      expect(everything.accepted.filter((e) => e.webhookId === `evt_${first!.id}`)).toHaveLength(2),
    );
    const [original, replayed] = everything.accepted.filter((e) => e.webhookId === `evt_${first!.id}`);
    expect(replayed!.raw).toBe(original!.raw);
    await eventually(async () => {
      const { rows } = await env.pool.query(`SELECT state, replays FROM event_deliveries WHERE event_id = $1::bigint`, [
        first!.id,
      ]);
      expect(rows).toEqual([{ state: 'delivered', replays: 1 }]);
    });
  });

  it(
    'replays every event since a time (the runbook for a receiver that was down), and ' + 'refuses a bad time',
    async () => {
      const last = (await eventRows(env, 'ev-op')).at(-1)!;
      const { rows } = await env.pool.query<{ at: Date }>(
        `SELECT occurred_at AS at FROM event_outbox WHERE id = $1::bigint`,
        [last.id],
      );
      const deps = { pool: env.pool, client: env.client, taskQueue: env.taskQueue };
      await expect(replayEvents(deps, { since: 'yesterday' })).rejects.toThrow(/since: must be an ISO 8601 time/);
      const { reopened } = await replayEvents(
        deps,
        { since: rows[0]!.at.toISOString() },
        { policy: { idleFor: '3s' } },
      );
      expect(reopened).toBeGreaterThanOrEqual(1);
      await eventually(() =>
        expect(everything.accepted.filter((e) => e.webhookId === `evt_${last.id}`)).toHaveLength(2),
      );
    },
  );

  it('signs with both secrets during a rotation, so a receiver holding either one verifies', async () => {
    const receiver = await startEventReceiver();
    try {
      const subscription = await subscribe(env, receiver, ['tenant.suspended', 'tenant.resumed']);
      const oldSecret = receiver.secrets[0]!;
      const { secret: newSecret } = await rotateSubscriptionSecret(
        { pool: env.pool, vault: vaultOf(env) },
        subscription.id,
        3600,
      );
      receiver.secrets.splice(0, 1, newSecret); // a receiver that switched at once
      await (await onboard(env, 'ev-rot')).result();
      await lifecycle(env, 'suspend', 'ev-rot');
      await eventually(() => expect(receiver.accepted).toHaveLength(1));
      expect(receiver.accepted[0]!.signatures).toBe(2);
      receiver.secrets.splice(0, 1, oldSecret); // one that has not switched yet
      await lifecycle(env, 'resume', 'ev-rot');
      await eventually(() => expect(receiver.accepted).toHaveLength(2));
      expect(receiver.accepted.map((e) => e.body.type)).toEqual(['tenant.suspended', 'tenant.resumed']);
    } finally {
      await receiver.close();
    }
  });

  it('keeps tokens and secrets out of event bodies, delivery records and logs', async () => {
    const { rows: payloads } = await env.pool.query(`SELECT payload::text AS p FROM event_outbox`);
    const { rows: deliveries } = await env.pool.query(`SELECT row_to_json(d)::text AS d FROM event_deliveries d`);
    const { rows: secrets } = await env.pool.query(`SELECT sealed FROM event_subscription_secrets`);
    expect(payloads.length).toBeGreaterThan(10);
    for (const { p } of payloads) expect(p).not.toMatch(TOKEN);
    for (const { d } of deliveries) expect(d).not.toMatch(TOKEN);
    for (const { sealed } of secrets) expect(sealed).toMatch(/^v1\./);
    expect(env.logs.join('')).not.toMatch(TOKEN);
  });
});
