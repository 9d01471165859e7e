import { Writable } from 'node:stream';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventActivities } from '../../activities/events.js';
import { listEventDeliveries, subscribeToEvents } from '../../src/client/events/events.js';
import { emitEvent, fanOutEvents } from '../../src/db/events-store.js';
import { withTransaction } from '../../src/db/pool.js';
import { DELIVERY_NOT_DELIVERED } from '../../src/domain/delivery-errors.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createLogger } from '../../src/infra/log.js';
import { createOutboundFetch, type Resolver } from '../../src/infra/outbound/fetch.js';
import { parseAllowHosts } from '../../src/domain/outbound-rule.js';
import { vaultOf } from '../harness/events-env.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { quietLogger } from '../harness/quiet-logger.js';

/**
 * Server-side request forgery through event subscriptions (issue 31): a subscription cannot be aimed
 * inward where it is made (the /v1 route, whatever the spelling), a name that resolves inward is
 * refused where the connection is made (nothing reaches the target), and a caller cannot tell from
 * the delivery record whether a port was closed, open, refused by the guard or slow.
 */
async function tcpServer(onConnection: (socket: Socket) => void) {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, connections: () => connections };
}

describe('outbound requests cannot be aimed inward', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let baseUrl: string;
  const subscriptionCount = async () =>
    Number((await env.pool.query(`SELECT count(*) AS n FROM event_subscriptions`)).rows[0].n);

  beforeAll(async () => {
    env = await createOrchestratorEnv('outbound-guard');
    // As in production: nothing allow-listed (the harness's default lets its loopback receivers through).
    ({ gateway, url: baseUrl } = await listenGatewayOver(env, { outboundAllowHosts: [] }));
  }, 60_000);
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('refuses at subscribe time a subscription aimed at a loopback admin route, in every spelling', async () => {
    const port = new URL(baseUrl).port;
    const before = await subscriptionCount();
    const urls = [
      `${baseUrl}/v1/tenants`,
      `http://localhost:${port}/metrics`,
      `https://127.0.0.1:${port}/v1/tenants`,
      `https://2130706433:${port}/v1/tenants`,
      `https://0177.0.0.1:${port}/v1/tenants`,
      `https://0x7f.1:${port}/v1/tenants`,
      `https://127.1:${port}/v1/tenants`,
      `https://[::1]:${port}/v1/tenants`,
      `https://[0:0:0:0:0:0:0:1]:${port}/v1/tenants`,
      `https://[::ffff:7f00:1]:${port}/v1/tenants`,
      `https://localhost:${port}/v1/tenants`,
      `https://localhost.:${port}/v1/tenants`,
      'https://0.0.0.0/',
      'https://169.254.169.254/latest/meta-data/iam/',
      'https://[fd00:ec2::254]/latest/meta-data/',
      'https://[fe80::1%25eth0]/',
      'https://10.0.0.8/hooks',
      'http://example.com/hooks',
    ];
    for (const url of urls) {
      const response = await fetch(`${baseUrl}/v1/event-subscriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_API_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, types: ['*'] }),
      });
      const body = (await response.json()) as { error: { code: string; fields: string[] } };
      expect(response.status, url).toBe(400);
      expect(body.error, url).toMatchObject({ code: 'INVALID_INPUT', fields: ['url'] });
    }
    expect(await subscriptionCount()).toBe(before);
  });

  it('accepts a loopback receiver the allow-list names, on its port only', async () => {
    const allowHosts = parseAllowHosts('127.0.0.1:9001').hosts;
    const deps = { pool: env.pool, vault: vaultOf(env), allowHosts };
    const made = await subscribeToEvents(deps, { url: 'http://127.0.0.1:9001/events', types: ['*'] }, 'test');
    expect(made.subscription.url).toBe('http://127.0.0.1:9001/events');
    await expect(
      subscribeToEvents(deps, { url: 'http://127.0.0.1:9002/events', types: ['*'] }, 'test'),
    ).rejects.toMatchObject({ name: 'InvalidInputError', problems: [expect.stringMatching(/^url: must be https/)] });
  });

  it(
    'refuses at connect a name that resolves inward (nothing reaches it), and records a closed port, an open ' +
      'port that is not HTTP, a refusal and a timeout as the same error, the detail in the debug log only',
    async () => {
      const guarded = await tcpServer((socket) => socket.destroy());
      const silent = await tcpServer(() => undefined); // accepts, never answers
      const garbage = await tcpServer((socket) => socket.end('SSH-2.0-OpenSSH_9.6\r\n'));
      const closed = await tcpServer(() => undefined);
      await new Promise<void>((resolve) => closed.server.close(() => resolve()));
      try {
        const names = {
          [`guarded.test`]: guarded.port,
          [`closed.test`]: closed.port,
          [`silent.test`]: silent.port,
          [`garbage.test`]: garbage.port,
        };
        // Every name resolves to loopback; all but guarded.test are listed, so they get as far as a connection.
        const resolve: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
        const allowHosts = parseAllowHosts(
          `closed.test:${closed.port},silent.test:${silent.port},garbage.test:${garbage.port}`,
        ).hosts;
        const subscriptions = new Map<string, string>();
        for (const [name, port] of Object.entries(names)) {
          // https with a name the system resolver does not know passes the check where it is given (no address to
          // refuse): only the connect-time check, with its own resolver, can refuse it.
          const { subscription } = await subscribeToEvents(
            { pool: env.pool, vault: vaultOf(env) },
            { url: `https://${name}:${port}/hook`, types: ['tenant.suspended'], label: name },
            'test',
          );
          subscriptions.set(subscription.id, name);
        }
        await withTransaction(env.pool, (tx) =>
          emitEvent(tx, { type: 'tenant.suspended', externalRef: 'og-1', data: { reason: 'test' } }),
        );
        await fanOutEvents(env.pool, 100);

        const logs: string[] = [];
        const activities = createEventActivities({
          pool: env.pool,
          platform: undefined as never,
          vault: vaultOf(env),
          logger: createLogger({
            level: 'debug',
            destination: new Writable({ write: (chunk, _e, done) => void (logs.push(String(chunk)), done()) }),
          }),
          events: { requestTimeoutMs: 1_000 },
          outbound: createOutboundFetch({ allowHosts, resolve }),
        });
        const deliveries = (await listEventDeliveries(env.pool)).filter((d) => subscriptions.has(d.subscriptionId));
        expect(deliveries).toHaveLength(4);
        const failures = new Map<string, string>();
        for (const delivery of deliveries) {
          const error = await new MockActivityEnvironment(undefined, { logger: quietLogger() })
            .run(activities.sendEventDelivery, { deliveryId: delivery.id })
            .then(
              () => undefined,
              (e: unknown) => e as Error,
            );
          expect(error, subscriptions.get(delivery.subscriptionId)).toBeInstanceOf(Error);
          failures.set(
            subscriptions.get(delivery.subscriptionId)!,
            error!.message.replace(delivery.id, '<delivery>').replace(delivery.subscriptionId, '<subscription>'),
          );
        }

        expect(guarded.connections()).toBe(0);
        expect(new Set(failures.values()).size).toBe(1);
        const shown = (await listEventDeliveries(env.pool)).filter((d) => subscriptions.has(d.subscriptionId));
        for (const d of shown) {
          expect({ lastStatus: d.lastStatus, lastError: d.lastError, attempts: d.attempts }).toEqual({
            lastStatus: null,
            lastError: DELIVERY_NOT_DELIVERED,
            attempts: 1,
          });
        }
        const debug = logs.join('');
        expect(debug).toMatch(/OutboundRefusedError/);
        expect(debug).toMatch(/ECONNREFUSED/);
      } finally {
        for (const s of [guarded, silent, garbage]) s.server.close();
      }
    },
    30_000,
  );
});
