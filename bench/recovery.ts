/**
 * recovery — issue 15's benchmark: how long an onboarding takes to recover from a lost create
 * response on a large fleet, when the platform answers the replayed create key with 409 and the only
 * way to find the tenant is to scan the sub-account list (the contract shows no filter). Run once per
 * page size the platform imposes (2 and 50, `limit` ignored), the new tenant last in the list.
 *
 *   seed N sub-accounts (admin route) ─► drop the create's response after commit ─► onboardTenant
 *   ─► 409 on retry ─► findSubaccountByExternalRef scans to the end (heartbeat per page) ─► adopt
 *   ─► key issued, verified, active ─► check exactly one sub-account carries the ref
 */
import { performance } from 'node:perf_hooks';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { createPool } from '../src/db/pool.js';
import { createLogger } from '../src/infra/log.js';
import { createPlatformClient } from '../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { SIM_SHAPES } from '../src/sim/choices.js';
import { buildSimulatorApp, DEFAULT_PARENT_ID, DEFAULT_SEED, DEFAULT_PLATFORM_KEY } from '../src/sim/index.js';
import type { Benchmark, BenchContext, BenchResult, Metric } from './lib/types.js';
import { startBenchWorker } from './lib/worker.js';

const PAGE_SIZES = [2, 50] as const;

export const recoveryBenchmark: Benchmark = {
  name: 'recovery',
  description:
    'onboarding recovery from a lost create response on a large fleet (scan by external ref), 2 and 50 per page',
  options: [{ flags: '--fleet <n>', description: 'sub-accounts already on the platform', defaultValue: 10_000 }],
  run,
};

async function post(url: string, body: unknown): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
}

async function run(context: BenchContext): Promise<BenchResult> {
  const { infra, options, log } = context;
  const fleet = options.fleet!;
  const latencyMs = options.latencyMs ?? 0;
  const connection = await NativeConnection.connect({ address: infra.temporalAddress });
  infra.cleanup.defer('recovery native connection', () => connection.close());
  const client = new Client({ connection, namespace: infra.namespace });
  const metrics: Metric[] = [];
  const violations: string[] = [];
  const details: Record<string, unknown> = { fleet, latencyMs };

  for (const pageSize of PAGE_SIZES) {
    const { app, runtime } = buildSimulatorApp({
      latencyMs,
      seed: DEFAULT_SEED,
      choices: { ...SIM_SHAPES.alt, defaultPageSize: pageSize },
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    infra.cleanup.defer(`recovery simulator (${pageSize}/page)`, () => app.close());
    const simUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    await post(`${simUrl}/__sim/subaccounts/bulk`, {
      parentId: DEFAULT_PARENT_ID,
      count: fleet,
      externalRefPrefix: 'fleet',
    });

    const pool = createPool(await infra.freshDatabase(`recovery${pageSize}`), {
      applicationName: 'tenant-orchestrator-bench',
      max: 10,
    });
    infra.cleanup.defer(`recovery pool (${pageSize}/page)`, () => pool.end());
    const activities = createActivities({
      pool,
      platform: createPlatformClient({
        baseUrl: `${simUrl}/api/v1`,
        platformKey: DEFAULT_PLATFORM_KEY,
        timeoutMs: 10_000,
      }),
      vault: createVault(parseMasterKeys(generateMasterKey('bench'))),
      logger: createLogger({ level: 'warn' }),
    });
    const taskQueue = `bench-recovery-${pageSize}-${process.pid}`;
    const worker = await startBenchWorker(
      { connection, namespace: infra.namespace, taskQueue, activities, tuning: {} },
      infra.cleanup,
    );

    await post(`${simUrl}/__sim/faults`, {
      rules: [{ method: 'POST', path: '/subaccounts/create', mode: 'drop-after-commit', count: 1 }],
    });
    const externalRef = `recover-${pageSize}-${process.pid}`;
    const pagesBefore = runtime.traffic.snapshot().byRoute['GET /subaccounts'] ?? 0;
    log(`${fleet} sub-accounts, ${pageSize} per page: onboarding ${externalRef} through a lost create response`);
    const started = performance.now();
    const handle = await startOnboarding(client, { externalRef, name: 'Recovery Bench' }, { taskQueue });
    const result = await handle.result();
    const seconds = (performance.now() - started) / 1000;
    const pages = (runtime.traffic.snapshot().byRoute['GET /subaccounts'] ?? 0) - pagesBefore;
    await worker.stop();

    const carrying = [...runtime.state.subaccounts.values()].filter((s) => s.externalRef === externalRef);
    if (carrying.length !== 1)
      violations.push(`${pageSize}/page: ${carrying.length} sub-accounts carry ${externalRef}`);
    if (result.subaccountId !== carrying[0]?.id)
      violations.push(`${pageSize}/page: the onboarding adopted ${result.subaccountId}, not ${carrying[0]?.id}`);
    metrics.push(
      {
        metric: `recovery at ${fleet} sub-accounts, ${pageSize} per page`,
        value: Math.round(seconds * 10) / 10,
        unit: 's',
      },
      { metric: `pages scanned at ${pageSize} per page`, value: pages, unit: '' },
    );
    details[`pageSize${pageSize}`] = { seconds, pages, subaccountId: result.subaccountId };
  }
  return { metrics, violations, details };
}
