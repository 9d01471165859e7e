import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { findOrBuildTemporalCli } from '../../src/infra/temporal-cli.js';
import { DEFAULT_PARENT_ID, DEFAULT_SEED } from '../../src/sim/index.js';
import { closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import { onboardingStatusQuery } from '../../workflows/onboard-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import { refusal } from '../harness/decisions.js';
import { expectExactlyOnce } from '../harness/onboarding-checks.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';
import { waitFor } from '../harness/rotation-env.js';

/**
 * Operator decisions, sent the ways operators send them (Updates from a client, `tenantctl`): a bad
 * value or a decision the run does not wait for is refused with the field and the rule, nothing
 * reaches history, and the platform's books show no new transfer. Update names are strings here,
 * as in `temporal workflow update execute --name ...`.
 */
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '2s' };

function transfersOf(env: OrchestratorEnv, externalRef: string) {
  const subaccount = env.sim.state().subaccounts.find((s) => s.externalRef === externalRef)!;
  return env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id);
}

describe('resolveTransfer on a transfer in needs_operator', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('decisions', { choices: { walletShowsTransfers: false } });
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  async function driveToNeedsOperator(externalRef: string) {
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
    ]);
    const handle = await startOnboarding(
      env.client,
      { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd: '900', options: FAST },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, `onboard:${externalRef}`, 'needs_operator');
    await clearFaults(env.sim);
    expect(transfersOf(env, externalRef)).toHaveLength(1);
    return handle;
  }

  it(
    'refuses "Applied", an empty operator, an empty reason and an unknown field ' +
      'before history, and sends no second transfer',
    async () => {
      const handle = await driveToNeedsOperator('decisions-typo');
      const eventsBefore = (await handle.fetchHistory()).events!.length;
      const ok = { outcome: 'applied', operator: 'bob', reason: 'seen on the wallet' };
      for (const [bad, field] of [
        [{ ...ok, outcome: 'Applied' }, 'outcome'],
        [{ ...ok, outcome: 'not_applied' }, 'outcome'],
        [{ ...ok, operator: '   ' }, 'operator'],
        [{ outcome: 'applied', reason: 'seen on the wallet' }, 'operator'],
        [{ ...ok, reason: '' }, 'reason'],
        [{ ...ok, amountMicroUsd: '900' }, 'amountMicroUsd'],
        ['applied', 'input'],
      ] as const) {
        const refused = await refusal(handle, 'resolveTransfer', bad);
        expect(refused.type).toBe('INVALID_DECISION');
        expect(refused.problems.map((p) => p.split(':')[0])).toContain(field);
      }
      // Nothing reached history, the run still waits, the intent is untouched, the books show one transfer.
      expect((await handle.fetchHistory()).events!.length).toBe(eventsBefore);
      expect((await handle.query(onboardingStatusQuery)).stage).toBe('needs_operator');
      const { rows } = await env.pool.query(`SELECT state FROM transfer_intents WHERE external_ref = 'decisions-typo'`);
      expect(rows).toEqual([{ state: 'needs_operator' }]);
      expect(transfersOf(env, 'decisions-typo')).toHaveLength(1);

      const answer = await handle.executeUpdate('resolveTransfer', { args: [{ ...ok, operator: '  bob ' }] });
      expect(answer).toMatchObject({
        transferState: 'succeeded',
        effect: expect.stringMatching(/no transfer is sent/),
      });
      expect((await handle.result()).status).toBe('active');
      expectExactlyOnce(env.sim.state(), 'decisions-typo', { amountMicroUsd: '900' });
      const { rows: audit } = await env.pool.query(
        `SELECT actor, details->>'reason' AS reason FROM audit_log WHERE external_ref = ` +
          `'decisions-typo' AND action = 'transfer.resolved_by_operator'`,
      );
      expect(audit).toEqual([{ actor: 'operator:bob', reason: 'seen on the wallet' }]);
    },
  );

  it(
    "the runbook's `temporal workflow update execute` refuses a typo and settles the " +
      'transfer, verbatim from the runbook (docs/operations.md)',
    async () => {
      const runbook = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
      const command = /`(temporal workflow update execute -w onboard:R --name resolveTransfer --input '[^']+')`/.exec(
        runbook,
      )?.[1];
      expect(command, 'the runbook shows the update command').toBeDefined();
      const temporalCli = await findOrBuildTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH });
      expect(temporalCli, 'a temporal CLI (the harness uses the same one)').toBeDefined();
      const run = (text: string) =>
        new Promise<{ code: number | null; output: string }>((resolve) => {
          const child = spawn('sh', ['-c', text.replace(/^temporal /, `"${temporalCli}" `)], {
            env: {
              PATH: process.env.PATH ?? '',
              HOME: process.env.HOME ?? '/root',
              TEMPORAL_ADDRESS: inject('temporalAddress'),
              TEMPORAL_NAMESPACE: inject('temporalNamespace'),
            },
          });
          let output = '';
          child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
          child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
          child.on('close', (code) => resolve({ code, output }));
        });

      const handle = await driveToNeedsOperator('decisions-runbook');
      const forRun = command!.replace('onboard:R', 'onboard:decisions-runbook');
      const typo = await run(forRun.replace('"outcome":"applied"', '"outcome":"Applied"'));
      expect(typo.code).not.toBe(0);
      expect(typo.output).toMatch(/outcome: must be exactly/);
      const ok = await run(forRun);
      expect(ok.code, ok.output).toBe(0);
      await handle.result();
      expectExactlyOnce(env.sim.state(), 'decisions-runbook', { amountMicroUsd: '900' });
    },
  );

  it(
    'tenantctl resolve-transfer prints the refusal and exits non-zero on "Applied"; ' +
      'not-applied sends once more under a fresh key',
    async () => {
      const handle = await driveToNeedsOperator('decisions-not-applied');
      const typo = await runCli(
        ['resolve-transfer', 'decisions-not-applied', '--outcome', 'Applied', '--reason', 'looked at the wallet'],
        env.cliEnv,
      );
      expect(typo.code).not.toBe(0);
      expect(typo.stderr).toMatch(/outcome: must be exactly "applied" or "not-applied"/);
      const blank = await runCli(
        ['resolve-transfer', 'decisions-not-applied', '--outcome', 'applied', '--reason', ' '],
        env.cliEnv,
      );
      expect(blank.code).not.toBe(0);
      expect(blank.stderr).toMatch(/^error: reason: /m);
      // Who decides is the token's name: a typed --operator is no option at all.
      const typed = await runCli(
        [
          'resolve-transfer',
          'decisions-not-applied',
          '--outcome',
          'applied',
          '--operator',
          'carol',
          '--reason',
          'x y z',
        ],
        env.cliEnv,
      );
      expect(typed.stderr).toMatch(/unknown option '--operator'/);
      expect(transfersOf(env, 'decisions-not-applied')).toHaveLength(1);

      // The dropped transfer did commit; an operator who says it did not gets exactly one more, under a new key.
      const sent = await runCli(
        [
          'resolve-transfer',
          'decisions-not-applied',
          '--outcome',
          'not-applied',
          '--reason',
          'not on the wallet',
          '--json',
        ],
        env.cliEnv,
      );
      expect(sent.code, sent.stderr).toBe(0);
      expect(JSON.parse(sent.stdout)).toMatchObject({
        workflowId: 'onboard:decisions-not-applied',
        decision: 'resolveTransfer',
        effect: expect.stringMatching(/fresh idempotency key/),
      });
      await handle.result();
      expect(transfersOf(env, 'decisions-not-applied')).toHaveLength(2);
      expect(new Set(transfersOf(env, 'decisions-not-applied').map((t) => t.idempotencyKey)).size).toBe(2);
      const { rows: audit } = await env.pool.query(
        `SELECT actor FROM audit_log WHERE external_ref = 'decisions-not-applied' AND action = 'transfer.resolved_by_operator'`,
      );
      expect(audit).toEqual([{ actor: 'operator:ops' }]);
    },
  );

  it(
    'a close in needs_operator takes its verdict through tenantctl resolve-transfer ' +
      '--close, refusing a typo and an unknown purpose',
    async () => {
      await setFaults(env.sim, [
        { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
        { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
      ]);
      const options = { ...FAST, unknownTransferDeadline: '1h' };
      await startOnboarding(
        env.client,
        { externalRef: 'decisions-close', name: 'Close Op', fundingMicroUsd: '900', options },
        { taskQueue: env.taskQueue },
      );
      await waitForOnboardingStage(env, 'onboard:decisions-close', 'reconciling_transfer');
      const close = await startLifecycle(
        env.client,
        'close',
        {
          externalRef: 'decisions-close',
          reason: 'customer left',
          operator: 'ops',
          options: { unknownTransferDeadline: '1s', pollInterval: '200ms' },
        },
        { taskQueue: env.taskQueue },
      );
      await waitFor(
        async () => ((await close.query(closeStatusQuery)).stage === 'needs_operator' ? true : undefined),
        'the close to ask an operator',
      );

      const verdict = ['--close', '--reason', 'seen on the wallet'];
      const typo = await runCli(
        ['resolve-transfer', 'decisions-close', '--outcome', 'Applied', ...verdict],
        env.cliEnv,
      );
      expect(typo.code).not.toBe(0);
      expect(typo.code).toBe(2);
      expect(typo.stderr).toMatch(/^error: outcome: must be exactly/m);
      const elsewhere = await runCli(
        ['resolve-transfer', 'decisions-close', '--outcome', 'applied', '--purpose', 'top-up', ...verdict],
        env.cliEnv,
      );
      expect(elsewhere.code).not.toBe(0);
      expect(elsewhere.stderr).toMatch(/has no open transfer "top-up"/);

      await clearFaults(env.sim);
      const ok = await runCli(
        ['resolve-transfer', 'decisions-close', '--outcome', 'applied', ...verdict, '--json'],
        env.cliEnv,
      );
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ workflowId: 'close:decisions-close', transferState: 'succeeded' });
      expect(await close.result()).toMatchObject({ status: 'closed' });
      expect(transfersOf(env, 'decisions-close')).toHaveLength(1);
    },
  );

  it('refuses a verdict when no transfer waits for one, and a decision sent to no run', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'decisions-calm', name: 'Calm', fundingMicroUsd: '500' },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    const cli = await runCli(
      ['resolve-transfer', 'decisions-calm', '--outcome', 'applied', '--reason', 'just in case'],
      env.cliEnv,
    );
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toMatch(/no running workflow onboard:decisions-calm/);
    expect(transfersOf(env, 'decisions-calm')).toHaveLength(1);
  });
});

describe('key reveal', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('decisions-reveal');
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('without a non-empty operator and reason exits non-zero, prints no token and audits nothing', async () => {
    await (
      await startOnboarding(
        env.client,
        { externalRef: 'decisions-reveal', name: 'Reveal' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    // Who reveals is the token's name (the gateway decides): a typed --operator is no option at all.
    for (const [args, field] of [
      [['--operator', 'alice', '--reason', 'deploy by hand'], /unknown option '--operator'/],
      [[], /--reason/],
      [['--reason', ' '], /reason: must not be empty/],
    ] as const) {
      const run = await runCli(['key', 'reveal', 'decisions-reveal', ...args, '--json'], env.cliEnv);
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(run.stderr).toMatch(field);
      expect(run.stdout + run.stderr).not.toMatch(/svsk_/);
    }
    const { rows } = await env.pool.query(`SELECT count(*)::int AS n FROM audit_log WHERE action = 'key.revealed'`);
    expect(rows).toEqual([{ n: 0 }]);

    const ok = await runCli(['key', 'reveal', 'decisions-reveal', '--reason', ' deploy by hand '], env.cliEnv);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^svsk_/);
    const { rows: audit } = await env.pool.query(
      `SELECT actor, details->>'reason' AS reason FROM audit_log WHERE action = 'key.revealed'`,
    );
    expect(audit).toEqual([{ actor: 'operator:ops', reason: 'deploy by hand' }]);
  });
});

describe('parentFunded while the parent cannot pay', () => {
  let env: OrchestratorEnv;
  const seed = { ...DEFAULT_SEED, parents: DEFAULT_SEED.parents.map((p) => ({ ...p, paidBalanceMicroUsd: '100' })) };
  beforeAll(async () => {
    env = await createOrchestratorEnv('decisions-funds', { seed });
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it(
    'refuses a parentFunded without an operator and a resolveTransfer that does not ' +
      'apply; tenantctl parent-funded goes on',
    async () => {
      const handle = await startOnboarding(
        env.client,
        { externalRef: 'decisions-broke', name: 'Broke', fundingMicroUsd: '5000', options: FAST },
        { taskQueue: env.taskQueue },
      );
      await waitForOnboardingStage(env, 'onboard:decisions-broke', 'waiting_for_parent_funds');
      const noOperator = await refusal(handle, 'parentFunded', { reason: 'topped up' });
      expect(noOperator).toMatchObject({
        type: 'INVALID_DECISION',
        problems: [expect.stringMatching(/^operator: is required/)],
      });
      const notNow = await refusal(handle, 'resolveTransfer', {
        outcome: 'applied',
        operator: 'eve',
        reason: 'seen on the wallet',
      });
      expect(notNow.type).toBe('DECISION_NOT_APPLICABLE');
      expect(notNow.message).toMatch(/no transfer in needs_operator/);

      const noReason = await runCli(['parent-funded', 'decisions-broke'], env.cliEnv);
      expect(noReason.code).not.toBe(0);
      await fetch(`${env.sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/balance`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paidMicroUsd: '10000' }),
      });
      const funded = await runCli(['parent-funded', 'decisions-broke', '--reason', 'topped up by finance'], env.cliEnv);
      expect(funded.code, funded.stderr).toBe(0);
      expect(funded.stdout).toMatch(/parentFunded accepted by onboard:decisions-broke/);
      expect((await handle.result()).status).toBe('active');
      expectExactlyOnce(env.sim.state(), 'decisions-broke', { amountMicroUsd: '5000' });
    },
  );
});
