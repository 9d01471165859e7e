/**
 * events — issue 21's benchmark, one run on one infrastructure:
 *
 *   a local receiver (verifies every delivery, Standard Webhooks) subscribed to every type
 *   ─► N onboardings with M in flight (each writes key.issued, transfer.succeeded, tenant.onboarded)
 *   ─► wait until every outbox event is delivered
 *   ─► deliveries per second at the receiver; lag from the change (the event's commit-time
 *      timestamp) to its arrival, p50/p99; per-tenant order and verification checked
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { ensureEventDispatcher, subscribeToEvents } from '../src/client/events/events.js';
import { createOutboundFetch } from '../src/infra/outbound/fetch.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { createPool } from '../src/db/pool.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { verifyWebhook } from '../src/secrets/standard-webhooks.js';
import { createVault } from '../src/secrets/vault.js';
import { buildSimulatorApp, DEFAULT_PLATFORM_KEY } from '../src/sim/index.js';
import { startPlatformWorker } from './lib/fleet.js';
import { runConcurrent, summarize } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';
import { startBenchWorker } from './lib/worker.js';

export const eventsBenchmark: Benchmark = {
  name: 'events',
  description: 'event deliveries per second to a local receiver and change-to-delivery lag at N onboardings',
  options: [
    { flags: '--onboardings <n>', description: 'onboardings whose events are delivered', defaultValue: 1000 },
    { flags: '--onboard-in-flight <n>', description: 'onboardings in flight at once', defaultValue: 100 },
    { flags: '--latency-ms <n>', description: 'simulated latency added to every platform call', defaultValue: 25 },
  ],
  run,
};

interface Arrival {
  id: string;
  tenant: string;
  sequence: number;
  lagMs: number;
  at: number;
}

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const count = options.onboardings!;
  const inFlight = options.onboardInFlight!;
  const violations: string[] = [];
  const { app } = buildSimulatorApp({
    latencyMs: options.latencyMs ?? 25,
    seed: {
      parents: [
        {
          id: 'parent_bench',
          paidBalanceMicroUsd: '1000000000000000000',
          promoBalanceMicroUsd: '0',
          platformKeys: [DEFAULT_PLATFORM_KEY],
          personalTokens: [],
          activeKeyLimit: 10,
        },
      ],
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  infra.cleanup.defer('events simulator', () => app.close());
  const simBase = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
  const pool = createPool(await infra.freshDatabase('events'), { applicationName: 'bench-events', max: 30 });
  infra.cleanup.defer('events pool', () => pool.end());
  const vault = createVault(parseMasterKeys(generateMasterKey('bench')));
  const activities = createActivities({
    pool,
    platform: createPlatformClient({ baseUrl: simBase, platformKey: DEFAULT_PLATFORM_KEY, timeoutMs: 10_000 }),
    vault,
    logger: createLogger({ level: 'warn' }),
    // The receiver below is on loopback (port not known yet): the outbound guard allows that host.
    outbound: createOutboundFetch({ allowHosts: [{ host: '127.0.0.1' }] }),
  });

  // The receiver: verifies, records arrival time and the lag from the event's timestamp.
  const arrivals: Arrival[] = [];
  let refused = 0;
  let secret = '';
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        verifyWebhook(secret, request.headers, body);
      } catch {
        refused += 1;
        response.writeHead(401).end();
        return;
      }
      const event = JSON.parse(body) as { id: string; tenant: string; sequence: string; timestamp: string };
      const at = Date.now();
      arrivals.push({
        id: event.id,
        tenant: event.tenant,
        sequence: Number(event.sequence),
        lagMs: at - Date.parse(event.timestamp),
        at,
      });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  infra.cleanup.defer('events receiver', () => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
  secret = (
    await subscribeToEvents({ pool, vault, allowHosts: [{ host: '127.0.0.1' }] }, { url, types: ['*'] }, 'bench')
  ).secret;

  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('events native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const taskQueue = `bench-events-${process.pid}`;
  await startBenchWorker(
    { connection, namespace: infra.namespace, taskQueue, activities, tuning: { maxCachedWorkflows: 3000 } },
    infra.cleanup,
  );
  await startPlatformWorker(infra.cleanup, 'events', {
    connection,
    namespace: infra.namespace,
    taskQueue,
    activities,
    requestsPerSecond: 10_000,
  });
  await ensureEventDispatcher(client, taskQueue, { waitMs: 5_000 });

  const tag = Date.now().toString(36);
  log(`${count} onboardings, ${inFlight} in flight, each delivered to one receiver`);
  const onboardStarted = Date.now();
  const onboard = await runConcurrent(count, inFlight, async (i) => {
    const handle = await startOnboarding(
      client,
      { externalRef: `ev-${tag}-${i}`, name: `Events ${i}`, fundingMicroUsd: '1000' },
      { taskQueue },
    );
    const result = await handle.result();
    if (result.status !== 'active') throw new Error(`onboarding ${i}: ${result.status}`);
  });
  const onboardEnded = Date.now();
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM event_outbox`);
  const expected = rows[0]!.n;
  log(`${expected} events written; waiting for their deliveries`);
  const deadline = Date.now() + 10 * 60_000;
  while (new Set(arrivals.map((a) => a.id)).size < expected && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 200));

  const unique = new Set(arrivals.map((a) => a.id)).size;
  if (unique < expected) violations.push(`${expected - unique} of ${expected} events never arrived`);
  if (refused > 0) violations.push(`${refused} deliveries failed verification`);
  const lastSeq = new Map<string, number>();
  for (const a of arrivals) {
    if ((lastSeq.get(a.tenant) ?? 0) > a.sequence) violations.push(`${a.tenant}: ${a.id} arrived after a later event`);
    lastSeq.set(a.tenant, Math.max(lastSeq.get(a.tenant) ?? 0, a.sequence));
  }
  const lag = summarize(arrivals.map((a) => a.lagMs));
  const first = Math.min(...arrivals.map((a) => a.at));
  const last = Math.max(...arrivals.map((a) => a.at));
  const perSecond = Math.round((arrivals.length / Math.max(1, last - first)) * 1000 * 10) / 10;
  // The backlog left when the last onboarding finished, drained with nothing else running: the pipeline's own rate.
  const drained = arrivals.filter((a) => a.at > onboardEnded).length;
  const drainPerSecond = drained ? Math.round((drained / Math.max(1, last - onboardEnded)) * 1000 * 10) / 10 : 0;
  const atEnd = arrivals.filter((a) => a.at <= onboardEnded).length;
  return {
    metrics: [
      { metric: `onboardings (${inFlight} in flight)`, value: onboard.perSecond, unit: '/s' },
      { metric: `event deliveries to a local receiver (${arrivals.length})`, value: perSecond, unit: '/s' },
      { metric: `backlog drain after the last onboarding (${drained})`, value: drainPerSecond, unit: '/s' },
      { metric: 'change → delivery lag p50', value: Math.round(lag.p50), unit: 'ms' },
      { metric: 'change → delivery lag p99', value: Math.round(lag.p99), unit: 'ms' },
    ],
    details: {
      events: expected,
      deliveries: arrivals.length,
      duplicates: arrivals.length - unique,
      deliveredWhileOnboarding: atEnd,
      onboardingMs: onboardEnded - onboardStarted,
      lag,
      onboard,
    },
    violations,
  };
}
