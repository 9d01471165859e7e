import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { eventually, startEventReceiver, type EventReceiver } from '../harness/event-receiver.js';
import { eventRows, startDispatcher } from '../harness/events-env.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

describe('events as operators and signup backends use them', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let baseUrl: string;
  let receiver: EventReceiver;
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${TEST_API_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as { data?: unknown; error?: unknown } };
  };
  const subscriptionCount = async () =>
    Number((await env.pool.query(`SELECT count(*) AS n FROM event_subscriptions`)).rows[0].n);

  beforeAll(async () => {
    env = await createOrchestratorEnv('events-surfaces');
    await env.startOrchestratorWorker();
    await startDispatcher(env);
    ({ gateway, url: baseUrl } = await listenGatewayOver(env));
    receiver = await startEventReceiver();
  }, 60_000);
  afterAll(async () => {
    await gateway?.app.close();
    await receiver?.close();
    await env?.close();
  });

  it('tenantctl events refuses bad subscriptions with one clear error each and writes nothing', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--url', 'http://example.com/hooks', '--types', '*'], /^error: url: must be https/m],
      [
        ['--url', 'https://example.com/hooks', '--types', 'tenant.onboarded,tenant.exploded'],
        /^error: types: unknown event type "tenant.exploded"/m,
      ],
      [['--url', 'https://example.com/hooks', '--types', ','], /^error: types: must name at least one event type/m],
      [['--url', 'ftp://example.com/x', '--types', '*'], /^error: url: must be an absolute http\(s\) URL/m],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(['events', 'subscribe', ...args], env.cliEnv);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(await subscriptionCount()).toBe(0);

    const ok = await runCli(
      ['events', 'subscribe', '--url', receiver.url, '--types', 'tenant.suspended,tenant.onboarded', '--json'],
      env.cliEnv,
    );
    expect(ok.code, ok.stderr).toBe(0);
    const created = JSON.parse(ok.stdout) as { subscription: { id: string; types: string[] }; secret: string };
    expect(created.subscription.types).toEqual(['tenant.onboarded', 'tenant.suspended']);
    expect(created.secret).toMatch(/^whsec_/);
    receiver.secrets.push(created.secret);

    const duplicate = await runCli(
      ['events', 'subscribe', '--url', receiver.url, '--types', 'tenant.onboarded,tenant.suspended'],
      env.cliEnv,
    );
    expect(duplicate.code).toBe(2);
    expect(duplicate.stderr).toMatch(
      new RegExp(`^error: url: subscription ${created.subscription.id} already sends these types`, 'm'),
    );
    expect(await subscriptionCount()).toBe(1);

    const list = await runCli(['events', 'list'], env.cliEnv);
    expect(list.stdout).toContain(created.subscription.id);
    expect(list.stdout).not.toMatch(/whsec_/);

    // A change, delivered; then replayed from the CLI under the same webhook-id.
    await (
      await startOnboarding(
        env.client,
        { externalRef: 'sf-a', name: 'Surface A', fundingMicroUsd: '1000' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    await eventually(() => expect(receiver.accepted.map((e) => e.body.type)).toEqual(['tenant.onboarded']));
    const deliveries = await runCli(['events', 'deliveries', '--json'], env.cliEnv);
    const [delivery] = JSON.parse(deliveries.stdout) as Array<{ eventId: string; state: string }>;
    expect(delivery).toMatchObject({ state: 'delivered' });
    const replay = await runCli(['events', 'replay', delivery!.eventId], env.cliEnv);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^1 deliveries queued again/m);
    await eventually(() =>
      expect(receiver.accepted.map((e) => e.webhookId)).toEqual([delivery!.eventId, delivery!.eventId]),
    );

    const rotated = await runCli(
      ['events', 'rotate-secret', created.subscription.id, '--overlap', '600', '--json'],
      env.cliEnv,
    );
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(
      (JSON.parse(rotated.stdout) as { subscription: { signingSecrets: number } }).subscription.signingSecrets,
    ).toBe(2);
    const failed = await runCli(['events', 'deliveries', '--failed'], env.cliEnv);
    expect(failed.stdout.trim()).toBe('no failed deliveries');
    const deleted = await runCli(['events', 'delete', created.subscription.id], env.cliEnv);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await runCli(['events', 'list'], env.cliEnv)).stdout.trim()).toBe('no subscriptions');
    // The subscription is the token's name's (the harness gateway's admin), not a typed operator's.
    const all = await runCli(['events', 'list', '--all', '--json'], env.cliEnv);
    expect(JSON.parse(all.stdout)).toMatchObject([
      { id: created.subscription.id, status: 'deleted', createdBy: 'ops' },
    ]);
  }, 120_000);

  it(
    'the /v1 routes refuse bad subscriptions naming the field, and a subscription ' + 'made over HTTP gets its events',
    async () => {
      const before = await subscriptionCount();
      const bad = [
        [{ url: 'http://10.0.0.8/hooks', types: ['*'] }, 'url'],
        [{ url: 'https://example.com/hooks', types: ['tenant.nope'] }, 'types'],
        [{ url: 'https://example.com/hooks', types: [] }, 'types'],
        [{ url: 'https://example.com/hooks' }, 'types'],
      ] as const;
      for (const [body, field] of bad) {
        const answer = await api('POST', '/v1/event-subscriptions', body);
        expect(answer.status).toBe(400);
        expect(answer.body.error).toMatchObject({ code: 'INVALID_INPUT', fields: [field] });
      }
      expect(await subscriptionCount()).toBe(before);

      const created = await api('POST', '/v1/event-subscriptions', {
        url: receiver.url,
        types: ['tenant.suspended'],
        label: 'http',
      });
      expect(created.status).toBe(201);
      receiver.secrets.push((created.body.data as { secret: string }).secret);
      const again = await api('POST', '/v1/event-subscriptions', { url: receiver.url, types: ['tenant.suspended'] });
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({ code: 'SUBSCRIPTION_DUPLICATE', fields: ['url'] });

      const accepted = receiver.accepted.length;
      await (
        await startLifecycle(
          env.client,
          'suspend',
          { externalRef: 'sf-a', reason: 'over http', operator: 'carol' },
          { taskQueue: env.taskQueue },
        )
      ).result();
      await eventually(() =>
        expect(receiver.accepted.slice(accepted).map((e) => e.body.type)).toEqual(['tenant.suspended']),
      );
      const [suspended] = (await eventRows(env, 'sf-a')).filter((r) => r.type === 'tenant.suspended');
      const replayed = await api('POST', `/v1/events/evt_${suspended!.id}/replay`);
      expect(replayed.status).toBe(202);
      expect(replayed.body.data).toEqual({ reopened: 1 });
      await eventually(() =>
        expect(receiver.accepted.slice(accepted).map((e) => e.webhookId)).toEqual([
          `evt_${suspended!.id}`,
          `evt_${suspended!.id}`,
        ]),
      );

      const listed = await api('GET', '/v1/event-deliveries');
      expect(listed.status).toBe(200);
      expect(JSON.stringify(listed.body)).not.toMatch(/whsec_/);
      expect((await api('GET', '/v1/event-subscriptions')).body.data).toHaveLength(1);
      expect((await api('DELETE', '/v1/event-subscriptions/sub_nope')).status).toBe(404);
      const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
      expect(metrics).toMatch(/tpo_event_deliveries\{type="tenant.suspended",outcome="delivered"\} [1-9]/);
    },
    120_000,
  );

  it("sets a tenant's low-balance threshold from tenantctl and over /v1 (funds.policy: a viewer is refused)", async () => {
    await (
      await startOnboarding(
        env.client,
        { externalRef: 'sf-low', name: 'Surface Low', fundingMicroUsd: '1000' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    const threshold = async () =>
      (
        await env.pool.query<{ t: string | null }>(
          `SELECT threshold_micro_usd::text AS t FROM wallet_alerts WHERE external_ref = 'sf-low'`,
        )
      ).rows.map((r) => r.t);

    const set = await runCli(['events', 'low-balance', 'sf-low', '--below', '5000000'], env.cliEnv);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout.trim()).toBe('sf-low: low-balance threshold 5000000');
    expect(await threshold()).toEqual(['5000000']);
    for (const args of [['--below', '1.5'], ['--below', '0'], ['--below', '5', '--default'], []]) {
      const bad = await runCli(['events', 'low-balance', 'sf-low', ...args], env.cliEnv);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr.trim()).toMatch(/^error: (--)?below: /);
    }
    const unknown = await runCli(['events', 'low-balance', 'nobody', '--below', '5'], env.cliEnv);
    expect(unknown.code).toBe(1);
    expect(await threshold()).toEqual(['5000000']);
    const back = await runCli(['events', 'low-balance', 'sf-low', '--default'], env.cliEnv);
    expect(back.code, back.stderr).toBe(0);
    expect(await threshold()).toEqual([null]);

    const viewer = generateOperator('events-viewer', 'viewer');
    const parsed = parseOperatorList(viewer.entry);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    const { gateway: withViewer, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
    });
    try {
      const put = (token: string, body: unknown) =>
        fetch(`${url}/v1/tenants/sf-low/low-balance`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const refused = await put(viewer.token, { belowMicroUsd: '7000' });
      expect(refused.status).toBe(403);
      expect(await threshold()).toEqual([null]);
      const bad = await put(TEST_API_TOKEN, { belowMicroUsd: 7000 });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: 'INVALID_INPUT', fields: ['belowMicroUsd'] } });
      const ok = await put(TEST_API_TOKEN, { belowMicroUsd: '7000' });
      expect(ok.status).toBe(200);
      expect(await threshold()).toEqual(['7000']);
      const cleared = await fetch(`${url}/v1/tenants/sf-low/low-balance`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${TEST_API_TOKEN}` },
      });
      expect(cleared.status).toBe(200);
      expect(await threshold()).toEqual([null]);
    } finally {
      await withViewer.app.close();
    }
  }, 120_000);
});
