import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { spawnCli } from '../harness/cli.js';
import { expectExactlyOnce, historyJson } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';

describe('onboarding across worker crashes', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('crash');
  });
  afterAll(async () => env?.close());

  it('completes exactly once when the worker process is killed mid-run and restarted', async () => {
    // Slow transfers and key creates keep the run in flight long enough to kill the worker inside a step.
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'delay', delayMs: 1500 },
      { method: 'POST', path: '/subaccounts/*/api-keys/create', mode: 'drop-after-commit', count: 1 },
    ]);
    const first = spawnCli(['worker'], env.cliEnv);
    await first.ready;
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'crash-1', name: 'Crash One', fundingMicroUsd: '3100' },
      { taskQueue: env.taskQueue },
    );
    const deadline = Date.now() + 20_000;
    while (!env.sim.state().subaccounts.some((s) => s.externalRef === 'crash-1')) {
      if (Date.now() > deadline) throw new Error(`no sub-account created; worker said: ${first.output()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    await new Promise((r) => setTimeout(r, 300)); // inside the delayed transfer
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    await clearFaults(env.sim);

    const second = spawnCli(['worker'], env.cliEnv);
    await second.ready;
    try {
      const result = await handle.result();
      expect(result.status).toBe('active');
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
    expectExactlyOnce(env.sim.state(), 'crash-1', { amountMicroUsd: '3100' });
    expect(await historyJson(env.client, 'onboard:crash-1')).not.toMatch(/svsk_/);
    expect(first.output() + second.output()).not.toMatch(/svsk_[A-Za-z0-9]/);
  });
});
