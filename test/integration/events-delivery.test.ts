import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { listEventDeliveries } from '../../src/client/events/events.js';
import { eventStreamWorkflowId } from '../../src/domain/ids.js';
import { spawnCli } from '../harness/cli.js';
import { eventually, startEventReceiver, type EventReceiver } from '../harness/event-receiver.js';
import { dispatchingSuite, eventRows, subscribe } from '../harness/events-env.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

const lifecycle = async (env: OrchestratorEnv, action: 'suspend' | 'resume', externalRef: string) =>
  (
    await startLifecycle(
      env.client,
      action,
      { externalRef, reason: `test ${action}`, operator: 'alice' },
      { taskQueue: env.taskQueue },
    )
  ).result();

const onboard = async (env: OrchestratorEnv, externalRef: string) =>
  (
    await startOnboarding(
      env.client,
      { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd: '2500' },
      { taskQueue: env.taskQueue },
    )
  ).result();

/** Each tenant's events arrived (first arrival of each webhook-id) in the stream's order. */
async function expectAllInTenantOrder(env: OrchestratorEnv, receiver: EventReceiver, refs: string[]) {
  for (const ref of refs) {
    const ids = (await eventRows(env, ref)).map((r) => `evt_${r.id}`);
    const arrived = [...new Set(receiver.accepted.filter((e) => e.body.tenant === ref).map((e) => e.webhookId))];
    expect(arrived, ref).toEqual(ids);
  }
}

describe('event delivery when receivers fail', () => {
  const suite = dispatchingSuite('events-fail');

  it(
    'a receiver answering 500 for a minute gets every event after, in tenant order; a ' + 'dead one delays nobody',
    async () => {
      const { env, receivers } = suite;
      const healthy = await startEventReceiver();
      const flaky = await startEventReceiver();
      const dead = await startEventReceiver();
      receivers.push(healthy, flaky, dead);
      dead.delayMs = 10 * 60_000; // accepts the connection, never answers
      flaky.failWith = { status: 500 };
      for (const r of [healthy, flaky, dead]) await subscribe(env, r);
      const outageStarted = Date.now();

      const refs = ['dl-a', 'dl-b', 'dl-c'];
      await Promise.all(refs.map((ref) => onboard(env, ref)));
      for (const ref of refs) await lifecycle(env, 'suspend', ref);
      for (const ref of refs) await lifecycle(env, 'resume', ref);
      const rows = await eventRows(env);
      expect(rows.length).toBeGreaterThanOrEqual(refs.length * 5);

      // The healthy receiver has everything during the outage, while one subscriber fails and one hangs.
      await eventually(() => {
        const got = new Set(healthy.accepted.map((e) => e.webhookId));
        expect(rows.filter((r) => !got.has(`evt_${r.id}`))).toEqual([]);
      }, 20_000);
      // ...while the flaky one has been refused all along and the dead one has not answered once.
      expect(Date.now() - outageStarted).toBeLessThan(60_000);
      await expectAllInTenantOrder(env, healthy, refs);
      expect(flaky.accepted).toEqual([]);
      expect(flaky.requests.length).toBeGreaterThan(0);
      expect(dead.accepted).toEqual([]);

      // A minute of 500s, then the receiver recovers and gets every event, each tenant in order.
      const left = 60_000 - (Date.now() - outageStarted);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      flaky.failWith = null;
      await eventually(() => {
        const got = new Set(flaky.accepted.map((e) => e.webhookId));
        expect(rows.filter((r) => !got.has(`evt_${r.id}`))).toEqual([]);
      }, 30_000);
      await expectAllInTenantOrder(env, flaky, refs);
      expect(flaky.requests.filter((r) => r.status === 500).length).toBeGreaterThan(refs.length);
      // The dead one is still being retried (bounded), holding back only its own streams.
      const { rows: deadRows } = await env.pool.query<{ state: string }>(
        `SELECT d.state FROM event_deliveries d JOIN event_subscriptions s ON s.id = d.subscription_id
        WHERE s.url = $1::text AND d.state = 'delivered'`,
        [dead.url],
      );
      expect(deadRows).toEqual([]);
    },
    180_000,
  );

  it('honours Retry-After, then marks a delivery failed and visible when its retries run out', async () => {
    const { env, receivers } = suite;
    const limited = await startEventReceiver();
    receivers.push(limited);
    limited.failWith = { status: 503, retryAfter: '2' };
    const subscription = await subscribe(env, limited, ['tenant.suspended']);
    // This stream's workflow runs before its first event, with a 7 s retry window (the dispatcher only signals it).
    await env.client.workflow.start('deliverEventStream', {
      taskQueue: env.taskQueue,
      workflowId: eventStreamWorkflowId(subscription.id, 'dl-x'),
      args: [
        {
          subscriptionId: subscription.id,
          stream: 'dl-x',
          policy: { retryFor: '7s', initialInterval: '200ms', idleFor: '1m' },
        },
      ],
    });
    await onboard(env, 'dl-x');
    await lifecycle(env, 'suspend', 'dl-x');
    const failed = await eventually(async () => {
      const views = await listEventDeliveries(env.pool, { failedOnly: true, subscriptionId: subscription.id });
      expect(views).toHaveLength(1);
      return views[0]!;
    }, 30_000);
    expect(failed).toMatchObject({ type: 'tenant.suspended', tenant: 'dl-x', state: 'failed', lastStatus: 503 });
    expect(limited.requests.length).toBeGreaterThanOrEqual(3);
    expect(limited.requests.length).toBeLessThanOrEqual(5);
    const gaps = limited.requests.slice(1).map((r, i) => r.at - limited.requests[i]!.at);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1_900);
  }, 60_000);
});

describe('event delivery across a worker crash', () => {
  let env: OrchestratorEnv;
  let receiver: EventReceiver;
  beforeAll(async () => {
    env = await createOrchestratorEnv('events-crash');
    receiver = await startEventReceiver();
    await subscribe(env, receiver);
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await env?.close();
  });
  /** Waits for one delivery row per event in the outbox, each settled as delivered. */
  const allDelivered = (timeoutMs: number) =>
    eventually(async () => {
      const events = (await eventRows(env)).length;
      const { rows: deliveries } = await env.pool.query<{ eventId: string; n: number; state: string }>(
        `SELECT event_id::text AS "eventId", count(*)::int AS n, min(state) AS state FROM ` +
          `event_deliveries GROUP BY event_id`,
      );
      expect(deliveries).toHaveLength(events);
      for (const d of deliveries) expect(d).toMatchObject({ n: 1, state: 'delivered' });
    }, timeoutMs);

  it('delivers every change once per delivery id when the worker is killed between change and delivery', async () => {
    const first = spawnCli(['worker'], env.cliEnv);
    await first.ready;
    await onboard(env, 'cr-a');
    await onboard(env, 'cr-b');
    await eventually(() => expect(receiver.accepted.length).toBeGreaterThanOrEqual(6), 30_000);
    // The onboardings' deliveries are settled before the crash: none of them may arrive again after it.
    await allDelivered(30_000);
    const beforeCrash = receiver.received.length;
    // Changes commit, their deliveries are in flight (the receiver is slow): the worker dies.
    receiver.delayMs = 2_000;
    await Promise.all([lifecycle(env, 'suspend', 'cr-a'), lifecycle(env, 'suspend', 'cr-b')]);
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    const second = spawnCli(['worker'], env.cliEnv);
    await second.ready;
    // The requests for the suspensions that reached the receiver: only these may arrive twice (a resend comes after
    // its 30 s timeout). Read once the second worker is up, as a request written just before the kill may be read
    // after the exit is seen; it may include the second worker's first sends, which are not repeats.
    const inFlightAtCrash = new Set(receiver.received.slice(beforeCrash));
    try {
      const rows = await eventRows(env);
      await eventually(() => {
        const got = new Set(receiver.accepted.map((e) => e.webhookId));
        expect(rows.filter((r) => !got.has(`evt_${r.id}`))).toEqual([]);
      }, 60_000);
      // One row per (subscription, event), each settled as delivered. A request the kill cut is retried once its
      // 30 s start-to-close timeout passes, though the receiver may have it already: allow for that.
      await allDelivered(90_000);
      // A request the kill cut (or answered just before the worker could record it) is sent again under the same
      // webhook-id (receivers dedupe by it): at most once more, and only for a request in flight at the crash.
      const counts = new Map<string, number>();
      for (const e of receiver.accepted) counts.set(e.webhookId, (counts.get(e.webhookId) ?? 0) + 1);
      const repeated = [...counts].filter(([, n]) => n > 1);
      for (const [id, n] of repeated) {
        expect(inFlightAtCrash.has(id), `${id} repeated though it was not in flight at the crash`).toBe(true);
        expect(n, `${id} arrived ${n} times`).toBe(2);
      }
      await expectAllInTenantOrder(env, receiver, ['cr-a', 'cr-b']);
      expect(first.output() + second.output()).not.toMatch(/(svsk_|svpk_|whsec_)[A-Za-z0-9]/);
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
  }, 180_000);
});
