import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants, platformTransfersOf } from '../harness/top-up-env.js';

describe('tenantctl fund, transfers and wallet as an operator runs them', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('tu-cli');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['cli-a'], '1000');
  });
  afterAll(async () => env?.close());

  it('funds once per key, replays the recorded transfer, and refuses the key with another amount', async () => {
    const first = await runCli(
      ['fund', 'cli-a', '--amount', '2500', '--key', 'inv-9', '--reason', 'invoice 9 paid', '--wait', '--json'],
      env.cliEnv,
    );
    expect(first.code, first.stderr).toBe(0);
    const funded = JSON.parse(first.stdout) as { started: boolean; transfer: Record<string, unknown> };
    expect(funded).toMatchObject({
      started: true,
      transfer: {
        purpose: 'top-up',
        amountMicroUsd: '2500',
        state: 'succeeded',
        idempotencyKey: 'inv-9',
        // Who asked is the token's name (the harness gateway's admin), not a flag.
        requestedBy: 'ops',
        reason: 'invoice 9 paid',
      },
    });

    const again = await runCli(
      ['fund', 'cli-a', '--amount', '2500', '--key', 'inv-9', '--reason', 'invoice 9 paid', '--json'],
      env.cliEnv,
    );
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ replayed: true, started: false, transfer: funded.transfer });

    const reused = await runCli(
      ['fund', 'cli-a', '--amount', '2600', '--key', 'inv-9', '--reason', 'invoice 9 paid'],
      env.cliEnv,
    );
    expect(reused.code).toBe(1);
    expect(reused.stderr).toMatch(/Idempotency-Key inv-9 was already used/);
    expect(platformTransfersOf(env.sim, 'cli-a').map((t) => t.amountMicroUsd)).toEqual(['1000', '2500']);
  });

  it('names the flag of a bad amount or key, exits 2 and starts nothing', async () => {
    for (const [args, flag] of [
      [['--amount', '1.5', '--key', 'bad-amount'], '--amount'],
      [['--amount', '0', '--key', 'bad-amount'], '--amount'],
      [['--amount', '1e6', '--key', 'bad-amount'], '--amount'],
      [['--amount', '5', '--key', 'a:b'], '--key'],
    ] as const) {
      const result = await runCli(['fund', 'cli-a', ...args], env.cliEnv);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr.trim()).toMatch(new RegExp(`^error: ${flag}: `));
    }
    expect(await workflowExists(env.client, 'fund:cli-a:bad-amount')).toBe(false);
    const unknown = await runCli(['fund', 'nobody', '--amount', '5', '--key', 'k1'], env.cliEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no tenant with this external ref/i);
  });

  it('prints the ledger and compares the wallet with it', async () => {
    const ledger = await runCli(['transfers', 'cli-a', '--json'], env.cliEnv);
    expect(ledger.code, ledger.stderr).toBe(0);
    const parsed = JSON.parse(ledger.stdout) as {
      transfers: Array<{ purpose: string; amountMicroUsd: string }>;
      succeededMicroUsd: string;
    };
    expect(parsed.transfers.map((t) => [t.purpose, t.amountMicroUsd])).toEqual([
      ['initial', '1000'],
      ['top-up', '2500'],
    ]);
    expect(parsed.succeededMicroUsd).toBe('3500');
    const text = await runCli(['transfers', 'cli-a'], env.cliEnv);
    expect(text.stdout).toMatch(/top-up\s+2500 micro-USD\s+succeeded\s+key inv-9 by ops \("invoice 9 paid"\)/);

    const wallet = await runCli(['wallet', 'cli-a', '--json'], env.cliEnv);
    expect(wallet.code, wallet.stderr).toBe(0);
    expect(JSON.parse(wallet.stdout)).toMatchObject({
      balanceMicroUsd: '3500',
      recordedInMicroUsd: '3500',
      differenceMicroUsd: '0',
      unrecordedTransfers: [],
      drift: null,
    });

    // Money in that we did not put in is the drift kind that already exists.
    const subaccountId = env.sim.state().subaccounts.find((s) => s.externalRef === 'cli-a')!.id;
    const { createPlatformClient } = await import('../../src/platform/index.js');
    const platform = createPlatformClient({
      baseUrl: env.sim.apiBase,
      platformKey: env.cliEnv.PLATFORM_API_KEY!,
      timeoutMs: 2_000,
    });
    await platform.transfer({ subaccountId, amountMicroUsd: '42', idempotencyKey: 'by-hand-1' });
    const drifted = await runCli(['wallet', 'cli-a'], env.cliEnv);
    expect(drifted.stdout).toMatch(/difference \(wallet − ledger\): 42 micro-USD/);
    expect(drifted.stdout).toMatch(/not ours: transfer .* of 42 under key by-hand-1/);
    expect(drifted.stdout).toMatch(/drift: balance_unexplained/);
  });

  it("over HTTP: the wallet read with the gateway's parent key, and a top-up run's status", async () => {
    const { createPlatformClient } = await import('../../src/platform/index.js');
    const platform = createPlatformClient({
      baseUrl: env.sim.apiBase,
      platformKey: env.cliEnv.PLATFORM_API_KEY!,
      timeoutMs: 2_000,
    });
    const withPlatform = await listenGatewayOver(env, { preflightPlatform: platform });
    const without = await listenGatewayOver(env);
    const headers = { authorization: `Bearer ${TEST_API_TOKEN}` };
    try {
      const wallet = await fetch(`${withPlatform.url}/v1/tenants/cli-a/wallet`, { headers });
      expect(wallet.status).toBe(200);
      expect(((await wallet.json()) as { data: unknown }).data).toMatchObject({ recordedInMicroUsd: '3500' });
      const noPlatform = await fetch(`${without.url}/v1/tenants/cli-a/wallet`, { headers });
      expect(noPlatform.status).toBe(503);
      expect(await noPlatform.json()).toMatchObject({ error: { code: 'PLATFORM_NOT_CONFIGURED' } });
      expect((await fetch(`${withPlatform.url}/v1/tenants/nobody/wallet`, { headers })).status).toBe(404);
      expect((await fetch(`${withPlatform.url}/v1/tenants/cli-a/wallet`)).status).toBe(401);

      const run = await fetch(`${without.url}/v1/tenants/cli-a/transfers/inv-9/run`, { headers });
      expect(run.status).toBe(200);
      expect(((await run.json()) as { data: unknown }).data).toMatchObject({
        idempotencyKey: 'inv-9',
        run: { workflowId: 'fund:cli-a:inv-9', status: 'COMPLETED', failure: null },
      });
      const never = await fetch(`${without.url}/v1/tenants/cli-a/transfers/never-sent/run`, { headers });
      expect(((await never.json()) as { data: unknown }).data).toMatchObject({ run: null });
    } finally {
      await withPlatform.gateway.app.close();
      await without.gateway.app.close();
    }
  });
});
