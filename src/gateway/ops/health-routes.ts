import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import type { Pool } from '../../client/records.js';
import { inboxCounts } from '../../client/webhooks/webhook-inbox.js';
import { PUBLIC } from '../http/access.js';
import { describeOnly, doc } from '../http/api-docs.js';
import { driftMetricLines } from './drift-metrics.js';
import { eventMetricLines } from './event-metrics.js';
import { gaugeLines, type GatewayMetrics } from '../http/metrics.js';

/**
 * `/healthz`: the process answers (liveness). `/readyz`: Postgres and Temporal both answer within a
 * short deadline (readiness: take the instance out of the load balancer otherwise). `/metrics`:
 * Prometheus text, the gateway's request metrics plus the inbox by state and open drift findings by kind.
 */
export interface HealthRoutesDeps {
  pool: Pool;
  client: Client;
  metrics: GatewayMetrics;
  readyTimeoutMs?: number;
  /** true: `/healthz` alone (the main listener when /readyz and /metrics have their own ops listener). */
  livenessOnly?: boolean;
}

/** The ops area: registered by the gateway app and, alone, by the ops listener (GATEWAY_OPS_PORT). */
export async function opsRoutes(app: FastifyInstance, deps: HealthRoutesDeps): Promise<void> {
  const timeoutMs = deps.readyTimeoutMs ?? 2_000;
  // Also on the ops listener, its own Fastify instance: the schemas describe, never filter.
  describeOnly(app);

  app.get('/healthz', { config: { permission: PUBLIC }, schema: healthzDoc }, async () => ({ status: 'ok' }));
  if (deps.livenessOnly === true) return;

  app.get('/readyz', { config: { permission: PUBLIC }, schema: readyzDoc }, async (_request, reply) => {
    const [postgres, temporal] = await Promise.all([
      probe(() => deps.pool.query('SELECT 1'), timeoutMs),
      probe(() => deps.client.workflowService.getSystemInfo({}), timeoutMs),
    ]);
    const ready = postgres === 'ok' && temporal === 'ok';
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not_ready', checks: { postgres, temporal } });
  });

  app.get('/metrics', { config: { permission: PUBLIC }, schema: metricsDoc }, async (_request, reply) => {
    const inbox = await inboxCounts(deps.pool).catch(() => undefined);
    const extra = inbox
      ? gaugeLines(
          'gateway_webhook_inbox_deliveries',
          'Deliveries in the inbox, by state (pending: workflow not started yet).',
          Object.entries(inbox).map(([state, value]) => ({ labels: { state }, value })),
        )
      : [];
    // One gauge per drift kind, so an alert fires before a customer notices.
    const drift = await driftMetricLines(deps.pool).catch(() => []);
    const events = await eventMetricLines(deps.pool).catch(() => []);
    return reply
      .type('text/plain; version=0.0.4; charset=utf-8')
      .send(deps.metrics.render([...extra, ...drift, ...events]));
  });
}

const healthzDoc = doc({
  summary: 'Liveness: the process answers',
  answers: {
    200: {
      description: 'Alive.',
      raw: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
    },
  },
});

const check = { type: 'string', enum: ['ok', 'unreachable', 'timeout'] };
const readiness = (status: string) => ({
  type: 'object',
  required: ['status', 'checks'],
  properties: {
    status: { const: status },
    checks: { type: 'object', required: ['postgres', 'temporal'], properties: { postgres: check, temporal: check } },
  },
});
const readyzDoc = doc({
  summary: 'Readiness: Postgres and Temporal answer within a short deadline',
  answers: {
    200: { description: 'Ready.', raw: readiness('ready') },
    503: { description: 'Not ready; `checks` says which.', raw: readiness('not_ready') },
  },
});

const metricsDoc = doc({
  summary: 'Prometheus metrics (text exposition format 0.0.4)',
  answers: { 200: { description: 'The metrics.', text: 'text/plain' } },
});

async function probe(check: () => Promise<unknown>, timeoutMs: number): Promise<'ok' | 'unreachable' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  try {
    return await Promise.race([check().then(() => 'ok' as const), deadline]);
  } catch {
    return 'unreachable';
  } finally {
    clearTimeout(timer);
  }
}
