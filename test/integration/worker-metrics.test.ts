import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { freePort } from '../../src/infra/ports.js';
import { spawnCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * Outcomes as an operator sees them: a `tenantctl worker` process (its own Runtime, so its own
 * Prometheus exporter on WORKER_METRICS_ADDRESS) runs an onboarding with a transfer and a close;
 * the exporter counts each by outcome, and the worker logs one info line per finished one.
 */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([0-9.e+-]+|NaN)$/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
    );
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

describe('worker outcome metrics and log lines', () => {
  let env: OrchestratorEnv;
  let worker: { child: ChildProcess; output: () => string };
  let metricsUrl: string;
  beforeAll(async () => {
    env = await createOrchestratorEnv('metrics');
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    const spawned = spawnCli(['worker'], {
      ...env.cliEnv,
      WORKER_METRICS_ADDRESS: `127.0.0.1:${port}`,
      LOG_LEVEL: 'info',
    });
    worker = spawned;
    await spawned.ready;
  });
  afterAll(async () => {
    if (worker && worker.child.exitCode === null) {
      const exited = new Promise((resolve) => worker.child.once('exit', resolve));
      worker.child.kill('SIGTERM');
      await exited;
    }
    await env?.close();
  });

  /** The samples of `name` with these labels, once the exporter shows them. */
  async function scrape(name: string, labels: Record<string, string>, timeoutMs = 20_000): Promise<Sample[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const samples = parseMetrics(await (await fetch(metricsUrl)).text()).filter(
        (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      );
      if (samples.length > 0 || Date.now() > deadline) return samples;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it(
    'counts a finished onboarding, its transfer and a close by outcome with ' +
      'durations, and logs one line each with ids, never a token',
    async () => {
      const onboarded = await (
        await startOnboarding(
          env.client,
          { externalRef: 'metrics-outcomes', name: 'Metrics', fundingMicroUsd: '700' },
          { taskQueue: env.taskQueue },
        )
      ).result();
      await (
        await startLifecycle(
          env.client,
          'close',
          { externalRef: 'metrics-outcomes', reason: 'metrics test', operator: 'ops' },
          { taskQueue: env.taskQueue },
        )
      ).result();

      for (const [operation, outcome] of [
        ['onboarding', 'active'],
        ['transfer', 'succeeded'],
        ['close', 'closed'],
      ] as const) {
        const counted = await scrape('tpo_outcomes', { operation, outcome, taskQueue: env.taskQueue });
        expect(
          counted.map((s) => s.value),
          `${operation} ${outcome}`,
        ).toEqual([1]);
        const timed = await scrape('tpo_duration_seconds_count', { operation, outcome, taskQueue: env.taskQueue });
        expect(
          timed.map((s) => s.value),
          `${operation} duration`,
        ).toEqual([1]);
      }

      const lines = worker
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const finished = lines.filter((l) => l.externalRef === 'metrics-outcomes' && typeof l.operation === 'string');
      expect(finished.map((l) => [l.msg, l.level])).toEqual([
        ['transfer succeeded', 30],
        ['onboarding active', 30],
        ['close closed', 30],
      ]);
      expect(finished[1]).toMatchObject({
        workflowId: 'onboard:metrics-outcomes',
        subaccountId: onboarded.subaccountId,
        keyId: onboarded.keyId,
        transferId: onboarded.funding!.transferId,
      });
      expect(worker.output()).not.toMatch(/svsk_[A-Za-z0-9]/);
    },
  );
});
