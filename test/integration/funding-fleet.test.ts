import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTO_TOP_UP_SCHEDULE_ID, autoTopUpSweepWorkflowId } from '../../src/domain/ids.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { waitFor } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs, startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

/**
 * `tenantctl funding parent` and `funding schedule` through the gateway: the parent's daily cap is set
 * under the token's name (a viewer's attempt is 403 and changes nothing), and the auto top-up sweep's
 * Schedule is made, triggered until its run completes, and deleted by an operator only.
 */
const operator = generateOperator('fund-operator', 'operator');
const viewer = generateOperator('fund-viewer', 'viewer');
const backend = generateOperator('fund-backend', 'backend');

describe('funding parent and schedule', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  const call = (method: string, path: string, token: string, body?: unknown) =>
    callAs(gateway.url, method, path, token, body);
  const capAudits = async () =>
    (
      await env.pool.query<{ actor: string; details: unknown }>(
        `SELECT actor, details FROM audit_log WHERE action = 'funding.parent_cap_set' ORDER BY id`,
      )
    ).rows;

  beforeAll(async () => {
    env = await createOrchestratorEnv('funding-fleet');
    await env.startOrchestratorWorker();
    gateway = await startOperatorGateway(env, { entries: [operator.entry, viewer.entry, backend.entry] });
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('shows and sets the parent cap with tenantctl, audited under the token name; a viewer may only read', async () => {
    const shown = await runCli(['funding', 'parent', 'show'], env.cliEnv);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n')).toEqual([
      'parent daily cap: none; held by top-ups today: 0 micro-USD',
      'balance: no insufficient-balance state',
      '',
    ]);
    const bad = await runCli(['funding', 'parent', 'set-cap', '12.5'], env.cliEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: maxPerDay: /);
    expect(await capAudits()).toEqual([]);

    const set = await runCli(['funding', 'parent', 'set-cap', '500000000'], env.cliEnv);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout.trim()).toBe('parent daily cap: 500000000');
    expect(await capAudits()).toEqual([{ actor: 'operator:ops', details: { maxPerDay: '500000000' } }]);

    const refused = await call('PUT', '/v1/funding/parent/cap', viewer.token, { maxPerDay: null });
    expect(refused).toMatchObject({ status: 403, json: { error: { code: 'FORBIDDEN' } } });
    const named = await call('PUT', '/v1/funding/parent/cap', operator.token, { maxPerDay: null, updatedBy: 'ops' });
    expect(named).toMatchObject({ status: 400, json: { error: { code: 'INVALID_INPUT' } } });
    expect(await capAudits()).toHaveLength(1);
    expect((await call('GET', '/v1/funding/parent', viewer.token)).json.data).toMatchObject({ maxPerDay: '500000000' });

    const cleared = await call('PUT', '/v1/funding/parent/cap', operator.token, { maxPerDay: null });
    expect(cleared).toMatchObject({ status: 200, json: { data: { maxPerDay: null } } });
    expect((await capAudits())[1]).toEqual({ actor: 'operator:fund-operator', details: { maxPerDay: null } });
  });

  it('makes, triggers and deletes the sweep schedule for an operator; a viewer or backend cannot', async () => {
    for (const token of [viewer.token, backend.token])
      expect((await call('POST', '/v1/funding/schedule', token, { every: '15m' })).status).toBe(403);
    expect(await call('GET', '/v1/funding/schedule', viewer.token)).toMatchObject({
      status: 404,
      json: { error: { code: 'SCHEDULE_NOT_FOUND' } },
    });
    expect((await call('POST', '/v1/funding/schedule', operator.token, {})).status).toBe(400);
    // The sweep's input is checked before anything is made: one 400 naming the field and its rule.
    const badBound = await call('POST', '/v1/funding/schedule', operator.token, { every: '15m', historyEventBound: 5 });
    expect(badBound).toMatchObject({ status: 400, json: { error: { code: 'INVALID_INPUT' } } });
    expect(badBound.json.error.message).toMatch(/historyEventBound/);
    expect((await call('GET', '/v1/funding/schedule', viewer.token)).status).toBe(404);

    const made = await runCli(['funding', 'schedule', 'create', '--every', '15m', '--page-size', '50'], env.cliEnv);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout.trim()).toBe(`created schedule ${AUTO_TOP_UP_SCHEDULE_ID}: every 15m`);
    try {
      const described = await runCli(['funding', 'schedule', 'describe'], env.cliEnv);
      expect(JSON.parse(described.stdout)).toMatchObject({ scheduleId: AUTO_TOP_UP_SCHEDULE_ID, paused: false });
      expect((await call('POST', '/v1/funding/schedule/run-now', backend.token, {})).status).toBe(403);
      const now = await runCli(['funding', 'schedule', 'run-now'], env.cliEnv);
      expect(now.stdout.trim()).toBe('run-now: done');
      // A scheduled run's id is the action's id with the time appended: read it from the schedule.
      const workflowId = await waitFor(
        async () =>
          (await env.client.schedule.getHandle(AUTO_TOP_UP_SCHEDULE_ID).describe()).info.recentActions[0]?.action
            .workflow.workflowId,
        (id) => id !== undefined,
        30_000,
        'the triggered sweep',
      );
      expect(workflowId).toMatch(new RegExp(`^${autoTopUpSweepWorkflowId()}`));
      expect(await env.client.workflow.getHandle(workflowId!).result()).toBeDefined();
    } finally {
      const deleted = await call('POST', '/v1/funding/schedule/delete', operator.token, {});
      expect(deleted.status).toBe(200);
    }
    const again = await runCli(['funding', 'schedule', 'delete'], env.cliEnv);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no auto top-up schedule/);
  });
});
