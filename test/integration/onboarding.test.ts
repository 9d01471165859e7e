import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { runCli } from '../harness/cli.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { expectExactlyOnce, failureTypeOf, historyJson } from '../harness/onboarding-checks.js';

const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1s', unknownTransferDeadline: '20s' };

describe('onboarding end to end', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('onboarding');
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('creates, funds, issues and verifies a key, and records every step', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'acme-1', name: 'Acme One', fundingMicroUsd: '2500000' },
      { taskQueue: env.taskQueue },
    );
    const result = await handle.result();
    expect(result).toMatchObject({ externalRef: 'acme-1', status: 'active' });
    expect(result.fingerprint).toMatch(/^sha256:[0-9a-f]{16}$/);
    const { subaccount } = expectExactlyOnce(env.sim.state(), 'acme-1', { amountMicroUsd: '2500000' });
    expect(subaccount.id).toBe(result.subaccountId);

    const { rows: tenants } = await env.pool.query(
      `SELECT status, subaccount_id FROM tenants WHERE external_ref = 'acme-1'`,
    );
    expect(tenants).toEqual([{ status: 'active', subaccount_id: result.subaccountId }]);
    const { rows: keys } = await env.pool.query(
      `SELECT status, platform_key_id, verified_at IS NOT NULL AS verified FROM ` +
        `tenant_keys WHERE external_ref = 'acme-1'`,
    );
    expect(keys).toEqual([{ status: 'active', platform_key_id: result.keyId, verified: true }]);
    const { rows: audit } = await env.pool.query(
      `SELECT action FROM audit_log WHERE external_ref = 'acme-1' ORDER BY id`,
    );
    expect(audit.map((r) => r.action)).toEqual(
      expect.arrayContaining([
        'tenant.recorded',
        'tenant.created',
        'transfer.intent',
        'transfer.succeeded',
        'key.issued',
        'key.verified',
        'tenant.activated',
      ]),
    );
  });

  it('skips the transfer when no funding is asked for', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'acme-nofund', name: 'No Funding' },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    expectExactlyOnce(env.sim.state(), 'acme-nofund', { amountMicroUsd: null });
  });

  it(
    'gives one tenant, one transfer and one key when the same signup is started 20 ' + 'times at once (helper and CLI)',
    async () => {
      const input = { externalRef: 'race-20', name: 'Race Twenty', fundingMicroUsd: '1000' };
      const starts = Array.from({ length: 20 }, (_, i) =>
        i % 4 === 0
          ? runCli(
              [
                'onboard',
                '--external-ref',
                input.externalRef,
                '--name',
                input.name,
                '--funding',
                input.fundingMicroUsd,
                '--json',
              ],
              env.cliEnv,
            ).then((r) => {
              expect(r.code, r.stderr).toBe(0);
              return JSON.parse(r.stdout) as { started: boolean };
            })
          : startOnboarding(env.client, input, { taskQueue: env.taskQueue }),
      );
      const handles = await Promise.all(starts);
      expect(handles.filter((h) => h.started)).toHaveLength(1);
      await env.client.workflow.getHandle('onboard:race-20').result();
      expectExactlyOnce(env.sim.state(), 'race-20', { amountMicroUsd: '1000' });
    },
  );

  for (const [label, paths] of [
    ['sub-account create', ['/subaccounts/create']],
    ['transfer', ['/subaccounts/*/wallet/transfers']],
    ['key create', ['/subaccounts/*/api-keys/create']],
    [
      'all three together',
      ['/subaccounts/create', '/subaccounts/*/wallet/transfers', '/subaccounts/*/api-keys/create'],
    ],
  ] as const) {
    it(`completes exactly once when the response of ${label} is lost after the platform committed it`, async () => {
      const externalRef = `drop-${label.replace(/\W+/g, '-')}`;
      await setFaults(
        env.sim,
        paths.map((path) => ({ method: 'POST', path, mode: 'drop-after-commit', count: 1 })),
      );
      try {
        const handle = await startOnboarding(
          env.client,
          { externalRef, name: `Drop ${label}`, fundingMicroUsd: '777', options: FAST },
          { taskQueue: env.taskQueue },
        );
        const result = await handle.result();
        expect(result.status).toBe('active');
      } finally {
        await clearFaults(env.sim);
      }
      const state = env.sim.state();
      const { keys } = expectExactlyOnce(state, externalRef, { amountMicroUsd: '777' });
      if (paths.some((p) => p.includes('api-keys'))) {
        // The lost key was revoked, not left behind: exactly one revoked orphan, named as ours.
        expect(keys.filter((k) => k.status === 'revoked')).toHaveLength(1);
      }
    });
  }

  it('retries the key step whole when its verification fails: the stored key is verified, none created again', async () => {
    // Issue and verify are one local activity: its retry finds the key stored and only verifies.
    await setFaults(env.sim, [
      { method: 'GET', path: '/projects', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE', count: 3 },
    ]);
    try {
      const handle = await startOnboarding(
        env.client,
        { externalRef: 'verify-retry', name: 'Verify Retry', fundingMicroUsd: '500', options: FAST },
        { taskQueue: env.taskQueue },
      );
      expect((await handle.result()).status).toBe('active');
    } finally {
      await clearFaults(env.sim);
    }
    const { keys } = expectExactlyOnce(env.sim.state(), 'verify-retry', { amountMicroUsd: '500' });
    expect(keys.filter((k) => k.status === 'revoked')).toEqual([]);
    const { rows } = await env.pool.query(
      `SELECT action FROM audit_log WHERE external_ref = 'verify-retry' AND action LIKE 'key.%' ORDER BY id`,
    );
    expect(rows.map((r) => r.action)).toEqual(['key.issued', 'key.verified']);
  });

  it(
    'never lets a token into workflow history or the logs, and `key reveal` returns ' + 'one the platform accepts',
    async () => {
      const histories = await Promise.all(
        ['onboard:acme-1', 'onboard:drop-all-three-together'].map((id) => historyJson(env.client, id)),
      );
      for (const history of histories) expect(history).not.toMatch(/svsk_/);
      expect(env.logs.join('\n')).not.toMatch(/svsk_[A-Za-z0-9]/);

      const revealed = await runCli(['key', 'reveal', 'acme-1', '--reason', 'test', '--json'], env.cliEnv);
      expect(revealed.code, revealed.stderr).toBe(0);
      const { token } = JSON.parse(revealed.stdout) as { token: string };
      expect(token).toMatch(/^svsk_/);
      const response = await fetch(`${env.sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
      const { rows } = await env.pool.query(
        `SELECT actor, action FROM audit_log WHERE external_ref = 'acme-1' AND action = 'key.revealed'`,
      );
      // Audited under the name the operator's token authenticates (the harness operator).
      expect(rows).toEqual([{ actor: 'operator:ops', action: 'key.revealed' }]);
    },
  );

  it('refuses the same external ref under another name, through the helper and through a Web-UI start', async () => {
    await expect(
      startOnboarding(env.client, { externalRef: 'acme-1', name: 'Someone Else' }, { taskQueue: env.taskQueue }),
    ).rejects.toMatchObject({
      code: 'EXTERNAL_REF_CONFLICT',
    });
    // A failed run may be retried: a Web-UI-style start of a new run with another name fails on our records.
    await env.pool.query(
      `INSERT INTO tenants (external_ref, name, status, create_idempotency_key) VALUES ` +
        `('taken', 'Original', 'failed', 'k-taken')`,
    );
    const handle = await env.client.workflow.start('onboardTenant', {
      taskQueue: env.taskQueue,
      workflowId: 'onboard:taken',
      args: [{ externalRef: 'taken', name: 'Impostor' }],
    });
    const error = await handle.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(failureTypeOf(error)).toBe('EXTERNAL_REF_CONFLICT');
    const { rows } = await env.pool.query(`SELECT name, status FROM tenants WHERE external_ref = 'taken'`);
    expect(rows).toEqual([{ name: 'Original', status: 'failed' }]);
  });
});
