/**
 * webhooks — issue 7's benchmark: verified registry deliveries per second through the gateway (a real
 * loopback socket, HMAC check, inbox INSERT … ON CONFLICT) and the p99 time to answer; target at
 * least 1,000/s on this machine.
 *
 *   seed 4 registrations with sealed secrets ─► pre-sign N deliveries (the platform's cost, untimed)
 *   ─► POST them with C in flight over keep-alive connections (timed) ─► check: every one answered
 *   202 and recorded once ─► resend 10% (must be duplicates) and 200 tampered ones (must be 401)
 *
 * Workflow starts are switched off for the timed run (the dispatcher queues nothing): they happen
 * after the answer, off the request path, and the inbox keeps the rows `pending` for the sweeper.
 * What is measured is what the platform waits for.
 */
import { Agent, request } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { createPool } from '../src/db/pool.js';
import { createDeliveryDispatcher } from '../src/gateway/webhooks/delivery-dispatcher.js';
import {
  buildTestGateway,
  listenOnLoopback,
  seedRegistration,
  signedDelivery,
  type SignedDelivery,
} from '../test/harness/gateway-app.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { runConcurrent } from './lib/stats.js';
import type { Benchmark, BenchContext, BenchResult } from './lib/types.js';

export const webhooksBenchmark: Benchmark = {
  name: 'webhooks',
  description: 'verified registry deliveries per second through the gateway into the inbox',
  options: [
    { flags: '--deliveries <n>', description: 'signed deliveries sent in the timed run', defaultValue: 20_000 },
    { flags: '--delivery-concurrency <n>', description: 'deliveries in flight at once', defaultValue: 64 },
  ],
  run,
};

const TARGET_PER_SECOND = 1_000;

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const count = options.deliveries!;
  const concurrency = options.deliveryConcurrency!;
  const pool = createPool(await infra.freshDatabase('webhooks'), {
    applicationName: 'tenant-orchestrator-bench-gateway',
    max: 20,
  });
  infra.cleanup.defer('webhooks pool', () => pool.end());
  const connection = await Connection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('webhooks Temporal connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });

  const dispatcher = createDeliveryDispatcher({ pool, start: async () => undefined, maxQueued: 0 });
  const gateway = buildTestGateway({
    pool,
    client,
    taskQueue: `bench-webhooks-${process.pid}`,
    keys: parseMasterKeys(generateMasterKey('bench')),
    dispatcher,
  });
  const base = await listenOnLoopback(gateway);
  infra.cleanup.defer('webhooks gateway', () => gateway.app.close());
  const registrations = await Promise.all(Array.from({ length: 4 }, () => seedRegistration(pool, gateway.vault)));

  log(`signing ${count} deliveries for ${registrations.length} receivers`);
  const deliveries = Array.from({ length: count }, (_, i) => {
    const registration = registrations[i % registrations.length]!;
    const { secret, webhookId } = registration.secrets[0]!;
    return {
      registrationId: registration.registrationId,
      delivery: signedDelivery(secret, { webhookId, payload: { image: 'registry.bench/app', tag: `v${i}` } }),
    };
  });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const send = (registrationId: string, delivery: Pick<SignedDelivery, 'raw' | 'headers'>) =>
    post(agent, `${base}/webhooks/registry/${registrationId}`, delivery);

  const warmup = Math.min(500, count);
  await runConcurrent(warmup, concurrency, async (i) => {
    const registration = registrations[i % registrations.length]!;
    const { secret, webhookId } = registration.secrets[0]!;
    await send(registration.registrationId, signedDelivery(secret, { webhookId }));
  });
  const statuses = new Map<number, number>();
  log(`sending ${count} deliveries, ${concurrency} in flight`);
  const timed = await runConcurrent(count, concurrency, async (i) => {
    const status = await send(deliveries[i]!.registrationId, deliveries[i]!.delivery);
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  });

  const violations: string[] = [];
  const ids = deliveries.map((d) => d.delivery.deliveryId);
  const recorded = await countRecorded(pool, ids);
  if (statuses.get(202) !== count)
    violations.push(`answers: ${JSON.stringify(Object.fromEntries(statuses))} (expected ${count} × 202)`);
  if (recorded !== count) violations.push(`inbox holds ${recorded} of ${count} deliveries`);

  const resent = deliveries.filter((_, i) => i % 10 === 0);
  const resentStatuses = await Promise.all(resent.map((d) => send(d.registrationId, d.delivery)));
  if (resentStatuses.some((s) => s !== 202) || (await countRecorded(pool, ids)) !== count)
    violations.push('a redelivery was refused or recorded twice');
  const tampered = deliveries
    .slice(0, 200)
    .map((d) => ({ ...d, delivery: { ...d.delivery, raw: Buffer.concat([d.delivery.raw, Buffer.from(' ')]) } }));
  const tamperedStatuses = await Promise.all(tampered.map((d) => send(d.registrationId, d.delivery)));
  if (tamperedStatuses.some((s) => s !== 401))
    violations.push(
      `a tampered delivery was not refused with 401 (${tamperedStatuses.filter((s) => s !== 401).length})`,
    );
  agent.destroy();

  return {
    metrics: [
      {
        metric: 'verified deliveries into the inbox',
        value: timed.perSecond,
        unit: '/s',
        target: { description: `>= ${TARGET_PER_SECOND}/s`, met: timed.perSecond >= TARGET_PER_SECOND },
      },
      { metric: 'time to answer p50', value: timed.latency.p50, unit: 'ms' },
      { metric: 'time to answer p99', value: timed.latency.p99, unit: 'ms' },
    ],
    violations,
    details: {
      deliveries: count,
      concurrency,
      receivers: registrations.length,
      wallMs: timed.wallMs,
      latency: timed.latency,
      statuses: Object.fromEntries(statuses),
    },
  };
}

function post(agent: Agent, url: string, delivery: Pick<SignedDelivery, 'raw' | 'headers'>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', agent, headers: { ...delivery.headers, 'content-length': String(delivery.raw.length) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(delivery.raw);
  });
}

async function countRecorded(pool: ReturnType<typeof createPool>, ids: string[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_inbox WHERE delivery_id = ANY($1::text[])`,
    [ids],
  );
  return rows[0]!.n;
}
