import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { onboardingStatusQuery } from '../../workflows/onboard-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import type { LooseJson } from '../harness/sim-calls.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';

/**
 * Four-eyes approvals (issue 22), with the production defaults (an OPERATORS list: resolveTransfer
 * and key reveal need a second operator): tenantctl as a child process, /v1 against a listening
 * gateway, a real worker, the platform simulated.
 */
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '2s' };
const alice = generateOperator('alice');
const bob = generateOperator('bob');
const OPERATORS = `${alice.entry},${bob.entry}`;

describe('four-eyes approvals', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const cli = (args: string[], token: string, extra: Record<string, string> = {}) =>
    runCli(args, { ...env.cliEnv, OPERATORS, TENANTCTL_GATEWAY_URL: url, TENANTCTL_OPERATOR_TOKEN: token, ...extra });
  const http = async (method: string, path: string, token: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, json: (await response.json()) as LooseJson };
  };

  beforeAll(async () => {
    env = await createOrchestratorEnv('approvals', { choices: { walletShowsTransfers: false } });
    await env.startOrchestratorWorker();
    const parsed = parseOperatorList(OPERATORS);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    // The server's policy (the production defaults with OPERATORS): both actions need a second operator.
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      approvals: { actions: new Set(['resolveTransfer', 'keyReveal'] as const), ttlMs: 86_400_000 },
    }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  function transfersOf(externalRef: string) {
    const subaccount = env.sim.state().subaccounts.find((s) => s.externalRef === externalRef)!;
    return env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id);
  }
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
    return handle;
  }
  const intentOf = async (externalRef: string) =>
    (await env.pool.query(`SELECT state, resolution FROM transfer_intents WHERE external_ref = $1`, [externalRef]))
      .rows[0];
  const stageOf = async (externalRef: string) =>
    (await env.client.workflow.getHandle(`onboard:${externalRef}`).query(onboardingStatusQuery)).stage;

  it(
    'a gated resolveTransfer does nothing until a second operator approves; the ' +
      'requester cannot approve; approving twice is refused',
    async () => {
      const handle = await driveToNeedsOperator('ap-verdict');
      // The requester's own environment decides nothing: the gateway's policy gates the verdict.
      const asked = await cli(
        ['resolve-transfer', 'ap-verdict', '--outcome', 'applied', '--reason', 'seen on the wallet', '--json'],
        alice.token,
        { APPROVAL_POLICY: 'none' },
      );
      expect(asked.code, asked.stderr).toBe(0);
      const { approvalId, status } = JSON.parse(asked.stdout) as { approvalId: string; status: string };
      expect(status).toBe('awaiting_approval');
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await stageOf('ap-verdict')).toBe('needs_operator');
      expect(await intentOf('ap-verdict')).toMatchObject({ state: 'needs_operator' });

      const listed = await cli(['approvals', 'list', '--json'], bob.token);
      expect(JSON.parse(listed.stdout)).toEqual([
        expect.objectContaining({ id: approvalId, status: 'awaiting_approval', requestedBy: 'alice' }),
      ]);

      const self = await cli(['approvals', 'approve', approvalId, '--reason', 'my own'], alice.token);
      expect(self.code).not.toBe(0);
      expect(self.stderr).toMatch(/a second, different operator must decide it/);
      expect(await stageOf('ap-verdict')).toBe('needs_operator');

      const approved = await cli(['approvals', 'approve', approvalId, '--reason', 'checked the wallet too'], bob.token);
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toMatch(new RegExp(`${approvalId} executed by bob`));
      expect(await handle.result()).toMatchObject({ status: 'active' });
      expect(transfersOf('ap-verdict')).toHaveLength(1);
      expect(await intentOf('ap-verdict')).toMatchObject({ state: 'succeeded' });

      const twice = await cli(['approvals', 'approve', approvalId, '--reason', 'once more'], bob.token);
      expect(twice.code).not.toBe(0);
      expect(twice.stderr).toMatch(/is executed \(by bob\): it can be decided once/);
      const { rows } = await env.pool.query(`SELECT action, actor FROM audit_log WHERE subject = $1 ORDER BY id`, [
        approvalId,
      ]);
      expect(rows).toEqual([
        { action: 'approval.requested', actor: 'operator:alice' },
        { action: 'approval.approved', actor: 'operator:bob' },
        { action: 'approval.executed', actor: 'operator:bob' },
      ]);
    },
  );

  it('an expired request cannot be approved and leaves the transfer untouched', async () => {
    const handle = await driveToNeedsOperator('ap-expired');
    // The lifetime is the server's (APPROVAL_TTL of the gateway asked), never the requester's shell.
    const parsed = parseOperatorList(OPERATORS);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    const shortLived = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      approvals: { actions: new Set(['resolveTransfer'] as const), ttlMs: 1_000 },
    });
    const asked = await cli(
      ['resolve-transfer', 'ap-expired', '--outcome', 'not-applied', '--reason', 'not on the wallet', '--json'],
      alice.token,
      { TENANTCTL_GATEWAY_URL: shortLived.url, APPROVAL_POLICY: 'none', APPROVAL_TTL: '30d' },
    ).finally(() => shortLived.gateway.app.close());
    expect(asked.code, asked.stderr).toBe(0);
    const { approvalId } = JSON.parse(asked.stdout) as { approvalId: string };
    await new Promise((r) => setTimeout(r, 1_500));
    const late = await http('POST', `/v1/approvals/${approvalId}/approve`, bob.token, { reason: 'too late' });
    expect(late.status).toBe(409);
    expect(late.json.error.code).toBe('APPROVAL_EXPIRED');
    expect(await stageOf('ap-expired')).toBe('needs_operator');
    expect(transfersOf('ap-expired')).toHaveLength(1);
    expect(await intentOf('ap-expired')).toMatchObject({ state: 'needs_operator' });
    await handle.cancel();
  });

  it('a key reveal waits for approval over HTTP, then its requester reads the token once', async () => {
    await (
      await startOnboarding(env.client, { externalRef: 'ap-reveal', name: 'Reveal' }, { taskQueue: env.taskQueue })
    ).result();
    const reveal = () => cli(['key', 'reveal', 'ap-reveal', '--reason', 'deploy by hand', '--json'], alice.token);
    const asked = await reveal();
    expect(asked.code, asked.stderr).toBe(0);
    const request = JSON.parse(asked.stdout) as { approvalId: string; status: string; token?: string };
    expect(request).toMatchObject({ status: 'awaiting_approval' });
    expect(request.token).toBeUndefined();

    const backend = await http('GET', '/v1/approvals', TEST_API_TOKEN);
    expect(backend.status).toBe(403);
    const listed = await http('GET', '/v1/approvals', bob.token);
    expect(listed.json.data.map((a: { id: string }) => a.id)).toContain(request.approvalId);
    const self = await http('POST', `/v1/approvals/${request.approvalId}/approve`, alice.token, { reason: 'mine' });
    expect(self.status).toBe(403);
    const noReason = await http('POST', `/v1/approvals/${request.approvalId}/approve`, bob.token, {});
    expect(noReason.status).toBe(400);
    const ok = await http('POST', `/v1/approvals/${request.approvalId}/approve`, bob.token, { reason: 'fine' });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toMatchObject({ state: 'approved', decidedBy: 'bob' });

    const revealed = await reveal();
    expect(revealed.code, revealed.stderr).toBe(0);
    expect(JSON.parse(revealed.stdout)).toMatchObject({ token: expect.stringMatching(/^svsk_/) });
    // Used up: the next reveal asks again.
    expect(JSON.parse((await reveal()).stdout)).toMatchObject({ status: 'awaiting_approval' });
    const { rows } = await env.pool.query(
      `SELECT actor, details->>'approval' AS approval FROM audit_log WHERE action = ` +
        `'key.revealed' AND external_ref = 'ap-reveal'`,
    );
    expect(rows).toEqual([{ actor: 'operator:alice', approval: request.approvalId }]);

    // An approval past APPROVAL_TTL is not used, even once approved: the reveal asks anew, nothing is read.
    const again = JSON.parse((await reveal()).stdout) as { approvalId: string };
    await http('POST', `/v1/approvals/${again.approvalId}/approve`, bob.token, { reason: 'fine' });
    await env.pool.query(`UPDATE approval_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      again.approvalId,
    ]);
    const late = JSON.parse((await reveal()).stdout) as { status: string; approvalId: string; token?: string };
    expect(late).toMatchObject({ status: 'awaiting_approval' });
    expect(late.approvalId).not.toBe(again.approvalId);
    expect(late.token).toBeUndefined();

    const unknown = await cli(['approvals', 'reject', 'apr_nope', '--reason', 'no such'], bob.token);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/no approval request apr_nope/);
  });
});
