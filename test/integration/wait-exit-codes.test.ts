/**
 * The exit codes of a waiting command, as an operator's script meets them (issue 35): tenantctl as a
 * child process against the gateway. A spend cap's refusal is exit 3 (it was 0), also for a replay of
 * the key; a `--timeout` that ends while the run waits is exit 4 with where the run stands, and the run
 * goes on (a later `--wait` joins it and completes, exit 0). docs/exit-codes.md is the table.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setParentCap } from '../../src/client/money/funding-policy.js';
import { DEFAULT_PARENT_ID } from '../../src/sim/index.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants, platformTransfersOf } from '../harness/top-up-env.js';

describe('exit codes of fund --wait', () => {
  let env: OrchestratorEnv;
  const setParentBalance = (paidMicroUsd: string) =>
    fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paidMicroUsd }),
    });

  beforeAll(async () => {
    env = await createOrchestratorEnv('wait-exits');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['wx-a'], '1000');
  });
  afterAll(async () => env?.close());

  it('a spend cap refusing the top-up is exit 3, with the refusal printed; its replay too', async () => {
    await setParentCap(env.pool, { maxPerDay: '100', updatedBy: 'test' });
    try {
      const refused = await runCli(
        ['fund', 'wx-a', '--amount', '2500', '--key', 'capped-1', '--wait', '--json'],
        env.cliEnv,
      );
      expect(refused.code, refused.stderr).toBe(3);
      expect(JSON.parse(refused.stdout)).toMatchObject({
        started: true,
        transfer: { state: 'refused', failureCode: expect.stringMatching(/^CAP_/) },
      });
      const replayed = await runCli(['fund', 'wx-a', '--amount', '2500', '--key', 'capped-1', '--wait'], env.cliEnv);
      expect(replayed.code, replayed.stderr).toBe(3);
      expect(replayed.stdout).toMatch(/^already recorded: .* refused /);
      // Without --wait the command does not report an outcome: the exit code is the call's.
      const plain = await runCli(['fund', 'wx-a', '--amount', '2500', '--key', 'capped-1'], env.cliEnv);
      expect(plain.code, plain.stderr).toBe(0);
    } finally {
      await setParentCap(env.pool, { maxPerDay: null, updatedBy: 'test' });
    }
    expect(platformTransfersOf(env.sim, 'wx-a').map((t) => t.amountMicroUsd)).toEqual(['1000']);
  });

  it('--timeout ending while the run waits is exit 4 with where it stands; the run goes on and completes', async () => {
    await setParentBalance('10');
    const timedOut = await runCli(
      ['fund', 'wx-a', '--amount', '2500', '--key', 'broke-1', '--wait', '--timeout', '3s'],
      env.cliEnv,
    );
    expect(timedOut.code, timedOut.stderr).toBe(4);
    const lines = timedOut.stdout.trim().split('\n');
    expect(lines[0]).toBe('still waiting after --timeout 3s (nothing was cancelled: the run goes on)');
    expect(lines[1]).toMatch(/^fund:wx-a:broke-1: RUNNING, /);

    const asJson = await runCli(
      ['fund', 'wx-a', '--amount', '2500', '--key', 'broke-1', '--wait', '--timeout', '0', '--json'],
      env.cliEnv,
    );
    expect(asJson.code, asJson.stderr).toBe(4);
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      stillWaiting: true,
      timeout: '0',
      runs: [{ workflowId: 'fund:wx-a:broke-1', status: 'RUNNING' }],
    });
    const { status } = await env.client.workflow.getHandle('fund:wx-a:broke-1').describe();
    expect(status.name).toBe('RUNNING');

    await setParentBalance('1000000000');
    const funded = await runCli(['parent-funded', '--reason', 'paid'], env.cliEnv);
    expect(funded.code, funded.stderr).toBe(0);
    const joined = await runCli(
      ['fund', 'wx-a', '--amount', '2500', '--key', 'broke-1', '--wait', '--timeout', '2m', '--json'],
      env.cliEnv,
    );
    expect(joined.code, joined.stderr).toBe(0);
    expect(JSON.parse(joined.stdout)).toMatchObject({ transfer: { state: 'succeeded', amountMicroUsd: '2500' } });
    expect(platformTransfersOf(env.sim, 'wx-a').map((t) => t.amountMicroUsd)).toEqual(['1000', '2500']);
  });

  it('--timeout is refused when the command will not wait, or is not a duration (exit 2, nothing started)', async () => {
    for (const [args, error] of [
      [['--timeout', '5s'], /^error: --timeout: only with --wait/],
      [['--wait', '--timeout', 'soon'], /^error: --timeout: must be a duration/],
    ] as const) {
      const run = await runCli(['fund', 'wx-a', '--amount', '5', '--key', 'never', ...args], env.cliEnv);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(error);
    }
    const suspend = await runCli(['suspend', 'wx-a', '--reason', 'x', '--no-wait', '--timeout', '5s'], env.cliEnv);
    expect(suspend.code).toBe(2);
    await expect(env.client.workflow.getHandle('fund:wx-a:never').describe()).rejects.toThrow();
    await expect(env.client.workflow.getHandle('suspend:wx-a').describe()).rejects.toThrow();
  });
});
