import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revealKey } from '../../src/client/keys/reveal-key.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { generateOperator, createOperatorDirectory, parseOperatorList } from '../../src/secrets/operators.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import { runCli } from '../harness/cli.js';
import { listenGatewayOver, waitFor } from '../harness/gateway-app.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * Delayed close with undo, the final statement, and operators as identities (issue 22): tenantctl
 * as a child process and /v1 against a listening gateway, a real worker behind both.
 */
const alice = generateOperator('alice');
const bob = generateOperator('bob');
const OPERATORS = `${alice.entry},${bob.entry}`;

describe('delayed close, its undo and the final statement', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const cli = (args: string[], as: { token?: string } = { token: alice.token }, extra: Record<string, string> = {}) =>
    runCli(args, {
      ...env.cliEnv,
      OPERATORS,
      TENANTCTL_GATEWAY_URL: url,
      TENANTCTL_OPERATOR_TOKEN: as.token ?? '',
      ...extra,
    });

  beforeAll(async () => {
    env = await createOrchestratorEnv('safe-close');
    await env.startOrchestratorWorker();
    const parsed = parseOperatorList(OPERATORS);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    // The server's minimum: these tests close after seconds (a shorter after is refused but to admins).
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      closeDelay: '1s',
    }));
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  async function onboardWithProject(externalRef: string) {
    const { subaccountId } = await (
      await startOnboarding(
        env.client,
        { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd: '5000' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    const { token } = await revealKey(
      { pool: env.pool, vault: createVault(parseMasterKeys(env.secretsKeys)) },
      { externalRef, slot: 'default', operator: 'test', reason: 'test makes a project' },
    );
    const response = await fetch(`${env.sim.apiBase}/projects/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'web', region: 'eu-1' }),
    });
    expect(response.status).toBe(201);
    return { subaccountId, token };
  }
  function platformView(subaccountId: string) {
    const state = env.sim.state();
    return {
      status: state.subaccounts.find((s) => s.id === subaccountId)?.status,
      liveProjects: state.projects.filter((p) => p.subaccountId === subaccountId && p.status !== 'deleted').length,
      activeKeys: state.apiKeys.filter((k) => k.subaccountId === subaccountId && k.status === 'active').length,
    };
  }
  const tenantStatus = async (externalRef: string) =>
    (await env.pool.query(`SELECT status FROM tenants WHERE external_ref = $1`, [externalRef])).rows[0]?.status;
  const auditOf = async (externalRef: string) =>
    (
      await env.pool.query<{ action: string; actor: string }>(
        `SELECT action, actor FROM audit_log WHERE external_ref = $1 ORDER BY id`,
        [externalRef],
      )
    ).rows;

  it(
    'a close --after suspends at once; close --cancel inside the window leaves the ' +
      'tenant active with its keys and projects',
    async () => {
      const { subaccountId } = await onboardWithProject('sc-cancel');
      const before = platformView(subaccountId);
      const scheduled = await cli(['close', 'sc-cancel', '--after', '1h', '--reason', 'customer asked to leave']);
      expect(scheduled.code, scheduled.stderr).toBe(0);
      expect(scheduled.stdout).toMatch(/close of sc-cancel scheduled: suspended now, closes at/);
      expect(platformView(subaccountId)).toEqual({ ...before, status: 'suspended' });
      expect(await tenantStatus('sc-cancel')).toBe('suspended');

      const handle = env.client.workflow.getHandle('close:sc-cancel');
      const status = await handle.query(closeStatusQuery);
      expect(status).toMatchObject({ stage: 'scheduled', timeLeft: expect.stringMatching(/^(59m|1h 0m)$/) });

      // resume is no way round the window: it is refused, saying what to do.
      const resume = await cli(['resume', 'sc-cancel', '--reason', 'try to resume']);
      expect(resume.code).not.toBe(0);
      expect(resume.stderr).toMatch(/CLOSE_SCHEDULED|close --cancel/);

      const cancelled = await cli(['close', 'sc-cancel', '--cancel', '--reason', 'customer stays'], {
        token: bob.token,
      });
      expect(cancelled.code, cancelled.stderr).toBe(0);
      expect(cancelled.stdout).toMatch(/close of sc-cancel cancelled/);
      expect(await handle.result()).toMatchObject({ status: 'close_cancelled', projectsDeleted: 0, keysRevoked: 0 });
      expect(platformView(subaccountId)).toEqual(before);
      expect(await tenantStatus('sc-cancel')).toBe('active');
      const audit = await auditOf('sc-cancel');
      expect(audit).toContainEqual({ action: 'tenant.close_scheduled', actor: 'operator:alice' });
      expect(audit).toContainEqual({ action: 'tenant.close_cancelled', actor: 'operator:bob' });
      expect(audit.map((a) => a.action)).not.toContain('tenant.closing');

      // Too late once the run is over: one clear refusal, nothing changes.
      const late = await cli(['close', 'sc-cancel', '--cancel', '--reason', 'again please']);
      expect(late.code).not.toBe(0);
      expect(late.stderr).toMatch(/no running workflow close:sc-cancel/);
    },
  );

  it(
    'a delayed close that runs writes the statement, then closes; tenantctl statement ' + 'fetches it (nothing secret)',
    async () => {
      const { subaccountId, token } = await onboardWithProject('sc-run');
      const scheduled = await cli(['close', 'sc-run', '--after', '2s', '--reason', 'contract ended', '--json']);
      expect(scheduled.code, scheduled.stderr).toBe(0);
      expect(JSON.parse(scheduled.stdout)).toMatchObject({ workflowId: 'close:sc-run', stage: 'scheduled' });
      const result = await env.client.workflow.getHandle('close:sc-run').result();
      expect(result).toMatchObject({ status: 'closed', projectsDeleted: 1, balanceLeftMicroUsd: '5000' });
      expect(platformView(subaccountId)).toEqual({ status: 'closed', liveProjects: 0, activeKeys: 0 });

      const actions = (await auditOf('sc-run')).map((a) => a.action);
      expect(actions.indexOf('tenant.statement_written')).toBeGreaterThan(actions.indexOf('project.deleted_for_close'));
      expect(actions.indexOf('tenant.statement_written')).toBeLessThan(actions.indexOf('tenant.closed'));

      const dir = mkdtempSync(join(tmpdir(), 'statement-'));
      const fetched = await cli(['statement', 'sc-run', '--out', join(dir, 'sc-run.json')]);
      expect(fetched.code, fetched.stderr).toBe(0);
      const text = readFileSync(join(dir, 'sc-run.json'), 'utf8');
      expect(text).not.toContain(token);
      expect(text).not.toMatch(/svsk_|svpk_/);
      const statement = JSON.parse(text) as Record<string, unknown>;
      expect(statement).toMatchObject({
        externalRef: 'sc-run',
        subaccountId,
        balanceLeftMicroUsd: '5000',
        transfers: [expect.objectContaining({ purpose: 'initial', amountMicroUsd: '5000', state: 'succeeded' })],
        keys: [expect.objectContaining({ fingerprint: expect.any(String), createdAt: expect.any(String) })],
        projectsDeleted: [expect.stringMatching(/^proj_/)],
      });
      expect((statement.audit as Array<{ action: string }>).map((a) => a.action)).toContain('tenant.close_scheduled');

      const http = await fetch(`${url}/v1/tenants/sc-run/statement`, {
        headers: { authorization: `Bearer ${bob.token}` },
      });
      expect(http.status).toBe(200);
      expect(((await http.json()) as { data: unknown }).data).toEqual(statement);
    },
  );

  it(
    'POST /v1/tenants/:ref/close with an operator token and "after": the run ' +
      'completes, audited under that operator',
    async () => {
      await onboardWithProject('sc-http');
      const response = await fetch(`${url}/v1/tenants/sc-http/close`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'closed over HTTP', after: '1s' }),
      });
      expect(response.status).toBe(202);
      const result = await env.client.workflow.getHandle('close:sc-http').result();
      expect(result).toMatchObject({ status: 'closed' });
      expect(await auditOf('sc-http')).toContainEqual({ action: 'tenant.close_scheduled', actor: 'operator:bob' });

      const typed = await fetch(`${url}/v1/tenants/sc-http/suspend`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bob.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'pretend', operator: 'alice' }),
      });
      expect(typed.status).toBe(400);
      expect(((await typed.json()) as { error: { fields: string[] } }).error.fields).toEqual(['operator']);
    },
  );

  it(
    'refuses bad input with one clear error and writes nothing: an unknown token, ' +
      '--after out of range, a typed name that is not yours',
    async () => {
      await onboardWithProject('sc-bad');
      const audited = (await auditOf('sc-bad')).length;
      const cases: Array<[string[], { token?: string }, RegExp]> = [
        [
          ['close', 'sc-bad', '--reason', 'bad token'],
          { token: 'tpo_op_not-a-real-token' },
          /the gateway at \S+ does not know this token/,
        ],
        [['close', 'sc-bad', '--reason', 'no token'], {}, /TENANTCTL_OPERATOR_TOKEN: is required/],
        [['close', 'sc-bad', '--after', '400d', '--reason', 'too long'], { token: alice.token }, /--after: must be 0/],
        [
          ['close', 'sc-bad', '--after', 'soon', '--reason', 'not a duration'],
          { token: alice.token },
          /--after: must be/,
        ],
        [
          ['close', 'sc-bad', '--after', '0', '--reason', 'too soon'],
          { token: alice.token },
          /--after: must be at least 1s/,
        ],
      ];
      for (const [args, as, message] of cases) {
        const run = await cli(args, as);
        expect(run.code, args.join(' ')).not.toBe(0);
        expect(run.stderr).toMatch(message);
        expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
      }
      // Who asks is the token's name: a typed --operator is no option at all.
      const typed = await cli(['suspend', 'sc-bad', '--operator', 'bob', '--reason', 'not me']);
      expect(typed.code).not.toBe(0);
      expect(typed.stderr).toMatch(/^error: unknown option '--operator'/);
      expect(await workflowExists(env.client, 'close:sc-bad')).toBe(false);
      expect(await workflowExists(env.client, 'suspend:sc-bad')).toBe(false);
      expect((await auditOf('sc-bad')).length).toBe(audited);
      const { rows } = await env.pool.query(
        `SELECT count(*)::int AS n FROM close_schedules WHERE external_ref = 'sc-bad'`,
      );
      expect(rows[0].n).toBe(0);

      const http = await fetch(`${url}/v1/tenants/sc-bad/close`, {
        method: 'POST',
        headers: { authorization: `Bearer ${alice.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'too long', after: '400d' }),
      });
      expect(http.status).toBe(400);
      expect(((await http.json()) as { error: { fields: string[] } }).error.fields).toEqual(['after']);
      const stranger = await fetch(`${url}/v1/tenants/sc-bad`, { headers: { authorization: 'Bearer tpo_op_nobody' } });
      expect(stranger.status).toBe(401);
      expect(await workflowExists(env.client, 'close:sc-bad')).toBe(false);
      await waitFor(
        async () => tenantStatus('sc-bad'),
        (s) => s === 'active',
        5_000,
        'sc-bad untouched',
      );
    },
  );
});
