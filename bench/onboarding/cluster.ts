/**
 * `npm run bench -- onboarding --cluster`: onboardTenant throughput with the production worker
 * processes (`tenantctl worker`, payload codec on) on three deployments in one run — the dev server
 * with one worker, then a Temporal cluster on Postgres (npm run cluster's launcher) with one worker
 * and with two on the same task queue. Each phase gets a fresh task queue, warm-up runs, then
 * `--cluster-count` onboardings with `--cluster-concurrency` in flight; CPU per onboarding is split
 * by process (workers, Temporal server, Postgres, simulator) to show where the time goes.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { setupNamespace } from '../../src/client/namespace-setup.js';
import { startTemporalCluster } from '../../src/infra/temporal-cluster.js';
import { startTenantctl } from '../../src/infra/tenantctl-process.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createDataConverter } from '../../src/secrets/payload-codec.js';
import { DEFAULT_SEED } from '../../src/sim/index.js';
import { startSimProcess, type SimProcess } from '../lib/sim-process.js';
import { runConcurrent, withCpu, type ConcurrentRun, type CpuMeasured } from '../lib/stats.js';
import type { BenchContext, Metric } from '../lib/types.js';

const FUNDING_MICRO_USD = '1000000';
const WARMUP = 20;

interface Phase {
  label: string;
  address: string;
  workers: number;
}

export async function runClusterPhases(
  context: BenchContext,
): Promise<{ metrics: Metric[]; details: Record<string, unknown>; violations: string[] }> {
  const { infra, options, log } = context;
  const count = options.clusterCount!;
  const concurrency = options.clusterConcurrency!;
  const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-bench-cluster-'));
  chmodSync(dir, 0o755);
  log('starting a Temporal cluster (server on Postgres)');
  const cluster = await startTemporalCluster({ dataDir: join(dir, 'data'), persistent: false, onProgress: log });
  infra.cleanup.defer('Temporal cluster', () =>
    cluster.stop().finally(() => rmSync(dir, { recursive: true, force: true })),
  );
  await setupNamespace(cluster.address, infra.namespace, log);
  const sim = await startSimProcess(
    {
      latencyMs: options.latencyMs ?? 25,
      seed: {
        ...DEFAULT_SEED,
        parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: '1000000000000000000' })),
      },
    },
    infra.cleanup,
  );
  const secretsKeys = generateMasterKey('benchcluster');
  const workerEnv = {
    DATABASE_URL: await infra.freshDatabase('cluster'),
    TEMPORAL_NAMESPACE: infra.namespace,
    PLATFORM_BASE_URL: sim.apiBase,
    PLATFORM_API_KEY: DEFAULT_SEED.parents[0]!.platformKeys[0]!,
    PLATFORM_RATE_LIMIT_PER_SECOND: '1000',
    SECRETS_KEYS: secretsKeys,
    PAYLOAD_CODEC: 'on',
    ROTATION_DEPLOYER: 'project-env',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    DATA_DIR: '/nonexistent-bench-stack-dir',
  };
  const phases: Phase[] = [
    { label: 'dev server, 1 worker', address: infra.temporalAddress, workers: 1 },
    { label: 'cluster, 1 worker', address: cluster.address, workers: 1 },
    { label: 'cluster, 2 workers', address: cluster.address, workers: 2 },
  ];
  const runs: Array<{ phase: Phase; run: CpuMeasured<ConcurrentRun> }> = [];
  const refs: string[] = [];
  for (const [index, phase] of phases.entries()) {
    const taskQueue = `bench-cluster-${process.pid}-${index}`;
    log(`${phase.label}: ${WARMUP} warm-up, then ${count} onboardings with ${concurrency} in flight`);
    const workers = [];
    for (let w = 1; w <= phase.workers; w++) {
      workers.push(
        await startTenantctl({
          name: `worker-${w}`,
          command: 'worker',
          env: { ...workerEnv, TEMPORAL_ADDRESS: phase.address, TEMPORAL_TASK_QUEUE: taskQueue },
          readyLine: 'worker polling',
        }),
      );
    }
    const connection = await Connection.connect({ address: phase.address });
    try {
      const client = new Client({
        connection,
        namespace: infra.namespace,
        dataConverter: createDataConverter(parseMasterKeys(secretsKeys)),
      });
      const tag = `bc${index}${Date.now().toString(36)}`;
      const onboard = async (ref: string) => {
        refs.push(ref);
        const handle = await startOnboarding(
          client,
          { externalRef: ref, name: `Bench ${ref}`, fundingMicroUsd: FUNDING_MICRO_USD },
          { taskQueue },
        );
        const result = await handle.result();
        if (result.status !== 'active') throw new Error(`onboarding of ${ref} ended ${String(result.status)}`);
      };
      await runConcurrent(WARMUP, WARMUP, (i) => onboard(`${tag}-w-${i}`));
      runs.push({
        phase,
        run: await withCpu(count, () => runConcurrent(count, concurrency, (i) => onboard(`${tag}-${i}`))),
      });
    } finally {
      await connection.close();
      for (const worker of workers) await worker.stop();
    }
  }
  const violations = await exactlyOnce(sim, refs);
  const metrics: Metric[] = runs.flatMap(({ phase, run }): Metric[] => [
    {
      metric: `onboardTenant throughput, ${phase.label} (${count}, ${concurrency} in flight)`,
      value: run.perSecond,
      unit: '/s',
    },
    { metric: `onboardTenant p50, ${phase.label}`, value: run.latency.p50, unit: 'ms' },
    { metric: `CPU per onboarding, ${phase.label}: ${cpuSplit(run)}`, value: totalCpu(run), unit: 'ms' },
  ]);
  return {
    metrics,
    violations,
    details: { historyShards: cluster.historyShards, phases: runs.map(({ phase, run }) => ({ ...phase, ...run })) },
  };
}

/** Each tenant of the run has one sub-account and one transfer on the simulator's books. */
async function exactlyOnce(sim: SimProcess, refs: string[]): Promise<string[]> {
  const state = await sim.state();
  const violations: string[] = [];
  for (const ref of refs) {
    const subs = state.subaccounts.filter((s) => s.externalRef === ref);
    const transfers = state.transfers.filter((t) => subs.some((s) => s.id === t.subaccountId));
    if (subs.length !== 1 || transfers.length !== 1)
      violations.push(`${ref}: ${subs.length} sub-accounts, ${transfers.length} transfers`);
  }
  return violations;
}

function totalCpu(run: CpuMeasured<ConcurrentRun>): number {
  return (
    Math.round((run.cpuMsPerRun + Object.values(run.otherProcessesCpuMsPerRun).reduce((a, b) => a + b, 0)) * 10) / 10
  );
}

/** `node 12.1, server 8.0, postgres 6.2` — ms per onboarding by process name, biggest first. */
function cpuSplit(run: CpuMeasured<ConcurrentRun>): string {
  const parts = Object.entries({ ...run.otherProcessesCpuMsPerRun, 'bench client': run.cpuMsPerRun }).sort(
    (a, b) => b[1] - a[1],
  );
  return parts
    .filter(([, ms]) => ms >= 0.5)
    .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
    .join(', ');
}
