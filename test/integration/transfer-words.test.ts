/**
 * One word for the first transfer (issue 35): the ledger called it `initial` and `status` called it
 * `initial-funding`. It is `initial` on every surface — `tenantctl status` and `transfers` (text and
 * JSON, hence HTTP), the transfer events' payload — while the stored intent keeps `initial-funding`
 * (part of the platform idempotency key of every first transfer sent). A close's verdict takes either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkCloseTransferVerdict } from '../../src/domain/operator-decisions.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { onboardTenants } from '../harness/top-up-env.js';

describe('the first transfer is `initial` everywhere', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('transfer-words');
    await env.startOrchestratorWorker();
    await onboardTenants(env, ['tw-a'], '1000');
  });
  afterAll(async () => env?.close());

  it('status, transfers and the transfer events say initial; the stored intent is unchanged', async () => {
    const status = await runCli(['status', 'tw-a'], env.cliEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^transfer initial: succeeded 1000 micro-USD$/m);
    expect(status.stdout).not.toContain('initial-funding');
    const statusJson = await runCli(['status', 'tw-a', '--json'], env.cliEnv);
    expect(JSON.parse(statusJson.stdout).transfers).toEqual([expect.objectContaining({ purpose: 'initial' })]);

    const ledger = await runCli(['transfers', 'tw-a', '--json'], env.cliEnv);
    expect(ledger.code, ledger.stderr).toBe(0);
    expect(JSON.parse(ledger.stdout).transfers).toEqual([
      expect.objectContaining({ purpose: 'initial', intent: 'initial', amountMicroUsd: '1000' }),
    ]);
    expect(ledger.stdout).not.toContain('initial-funding');

    const { rows: events } = await env.pool.query<{ payload: { purpose: string; kind: string } }>(
      `SELECT payload FROM event_outbox WHERE external_ref = 'tw-a' AND type LIKE 'transfer.%'`,
    );
    expect(events.length).toBeGreaterThan(0);
    for (const { payload } of events) expect(payload).toMatchObject({ purpose: 'initial', kind: 'initial' });

    const { rows: stored } = await env.pool.query(`SELECT purpose FROM transfer_intents WHERE external_ref = 'tw-a'`);
    expect(stored).toEqual([{ purpose: 'initial-funding' }]);
  });

  it("a close's verdict names the first transfer by either word (the run matches the stored intent)", () => {
    for (const purpose of ['initial', 'initial-funding']) {
      const checked = checkCloseTransferVerdict({ purpose, outcome: 'applied', operator: 'ops', reason: 'checked' });
      expect(checked).toMatchObject({ ok: true, value: { purpose: 'initial-funding' } });
    }
  });
});
