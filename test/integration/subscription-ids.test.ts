/**
 * Event subscription ids have their own prefix, `esub_` (issue 35: they used `sub_`, the platform's
 * sub-account prefix), as tenantctl prints them; a subscription stored before under `sub_…` is still
 * listed, delivered to, shown in its deliveries, rotated and deleted by that id.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { withTransaction } from '../../src/db/pool.js';
import { insertSubscription } from '../../src/db/event-subscriptions-store.js';
import { generateWebhookSecret, subscriptionSecretAad } from '../../src/secrets/standard-webhooks.js';
import { runCli } from '../harness/cli.js';
import { eventually, startEventReceiver, type EventReceiver } from '../harness/event-receiver.js';
import { startDispatcher, vaultOf } from '../harness/events-env.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants } from '../harness/top-up-env.js';

const LEGACY = 'sub_legacyAbc123xyz';

describe('event subscription ids', () => {
  let env: OrchestratorEnv;
  let fresh: EventReceiver;
  let legacy: EventReceiver;

  beforeAll(async () => {
    env = await createOrchestratorEnv('subscription-ids');
    await env.startOrchestratorWorker();
    await startDispatcher(env);
    [fresh, legacy] = await Promise.all([startEventReceiver(), startEventReceiver()]);
    await onboardTenants(env, ['sid-a']);
    // A subscription as an earlier version stored it: a `sub_` id, its secret sealed under that id.
    const secret = generateWebhookSecret();
    const sealed = vaultOf(env).seal(secret, subscriptionSecretAad({ subscriptionId: LEGACY, generation: 1 }));
    await withTransaction(env.pool, (tx) =>
      insertSubscription(tx, {
        id: LEGACY,
        url: legacy.url,
        types: ['tenant.suspended'],
        label: 'made before esub_',
        createdBy: 'ops',
        sealed,
      }),
    );
    legacy.secrets.push(secret);
  }, 120_000);
  afterAll(async () => {
    await fresh?.close();
    await legacy?.close();
    await env?.close();
  });

  it('a new subscription is esub_…; one stored as sub_… keeps working by its id', async () => {
    const made = await runCli(
      ['events', 'subscribe', '--url', fresh.url, '--types', 'tenant.suspended', '--json'],
      env.cliEnv,
    );
    expect(made.code, made.stderr).toBe(0);
    const { subscription, secret } = JSON.parse(made.stdout) as { subscription: { id: string }; secret: string };
    expect(subscription.id).toMatch(/^esub_[A-Za-z0-9]{12}$/);
    fresh.secrets.push(secret);

    await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: 'sid-a', reason: 'ids', operator: 'ops' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    for (const receiver of [fresh, legacy])
      await eventually(() => expect(receiver.accepted.map((e) => e.body.type)).toEqual(['tenant.suspended']));

    const listed = await runCli(['events', 'list', '--json'], env.cliEnv);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((s) => s.id).sort()).toEqual(
      [subscription.id, LEGACY].sort(),
    );
    for (const id of [subscription.id, LEGACY]) {
      const deliveries = await runCli(['events', 'deliveries', '--subscription', id, '--json'], env.cliEnv);
      expect(deliveries.code, deliveries.stderr).toBe(0);
      expect(JSON.parse(deliveries.stdout)).toEqual([
        expect.objectContaining({ subscriptionId: id, state: 'delivered' }),
      ]);
    }
    const rotated = await runCli(['events', 'rotate-secret', LEGACY, '--overlap', '600', '--json'], env.cliEnv);
    expect(rotated.code, rotated.stderr).toBe(0);
    const deleted = await runCli(['events', 'delete', LEGACY], env.cliEnv);
    expect(deleted.code, deleted.stderr).toBe(0);
    const { rows } = await env.pool.query(`SELECT status FROM event_subscriptions WHERE id = $1`, [LEGACY]);
    expect(rows).toEqual([{ status: 'deleted' }]);
  });
});
