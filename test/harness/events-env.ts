import { afterAll, beforeAll } from 'vitest';
import { createActivities, type Activities } from '../../activities/index.js';
import { ensureEventDispatcher, subscribeToEvents } from '../../src/client/events/events.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault, type Vault } from '../../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/index.js';
import type { DispatchEventsInput } from '../../src/domain/events.js';
import type { EventReceiver } from './event-receiver.js';
import { createOrchestratorEnv, type OrchestratorEnv } from './onboarding-env.js';
import { testAllowHosts, testOutbound } from './outbound.js';

/** Delivery timings for tests: quick retries, a short bounded retry window, streams that end soon. */
export const FAST_DELIVERY: DispatchEventsInput = {
  waitMs: 1_000,
  policy: { initialInterval: '200ms', maximumInterval: '2s', retryFor: '3m', idleFor: '3s' },
};

export function vaultOf(env: Pick<OrchestratorEnv, 'secretsKeys'>): Vault {
  return createVault(parseMasterKeys(env.secretsKeys));
}

/** The activities as the worker builds them, for steps the test drives directly (rotation, drift, wallet reads). */
export function directActivities(env: OrchestratorEnv, lowBalanceMicroUsd?: string): Activities {
  return createActivities({
    pool: env.pool,
    platform: createPlatformClient({ baseUrl: env.sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 2_000 }),
    vault: vaultOf(env),
    logger: createLogger({ level: 'silent' }),
    outbound: testOutbound,
    ...(lowBalanceMicroUsd ? { events: { lowBalanceMicroUsd } } : {}),
  });
}

export async function startDispatcher(env: OrchestratorEnv, input: DispatchEventsInput = FAST_DELIVERY) {
  await ensureEventDispatcher(env.client, env.taskQueue, input);
}

/** Subscribes the receiver and hands it its secret. */
export async function subscribe(env: OrchestratorEnv, receiver: EventReceiver, types: string[] = ['*'], label = '') {
  const { subscription, secret } = await subscribeToEvents(
    { pool: env.pool, vault: vaultOf(env), allowHosts: testAllowHosts },
    { url: receiver.url, types, label },
    'test',
  );
  receiver.secrets.push(secret);
  return subscription;
}

export async function eventRows(env: Pick<OrchestratorEnv, 'pool'>, externalRef?: string) {
  const { rows } = await env.pool.query<{ id: string; type: string; externalRef: string | null; seq: string }>(
    `SELECT o.id::text AS id, o.type, o.external_ref AS "externalRef", o.seq::text AS seq FROM event_outbox o
      WHERE ($1::text IS NULL OR o.external_ref = $1::text) ORDER BY o.stream, o.seq`,
    [externalRef ?? null],
  );
  return rows;
}

/**
 * A describe block's orchestrator with its worker and the event dispatcher running (its beforeAll and afterAll
 * are registered here). `env` is set once beforeAll ran; receivers pushed to `receivers` are closed after.
 */
export function dispatchingSuite(name: string): { env: OrchestratorEnv; receivers: EventReceiver[] } {
  const suite = { receivers: [] as EventReceiver[] } as { env: OrchestratorEnv; receivers: EventReceiver[] };
  beforeAll(async () => {
    suite.env = await createOrchestratorEnv(name);
    await suite.env.startOrchestratorWorker();
    await startDispatcher(suite.env);
  }, 60_000);
  afterAll(async () => {
    for (const r of suite.receivers) await r.close();
    await suite.env?.close();
  });
  return suite;
}
