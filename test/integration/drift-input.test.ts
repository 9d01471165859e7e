import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { DRIFT_SCHEDULE_ID } from '../../src/domain/ids.js';
import { buildDriftOptions } from '../../src/main/wiring/drift-options.js';
import { runCli } from '../harness/cli.js';
import { waitFor } from '../harness/gateway-app.js';
import { callAs, startOperatorGateway } from '../harness/operator-gateway.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';

/** Bad input gets one clear error and writes nothing: no check row, no finding, no audit. */
async function written(env: DriftEnv): Promise<number> {
  const { rows } = await env.pool.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM drift_checks) + (SELECT count(*) FROM ` +
      `drift_findings) + (SELECT count(*) FROM audit_log WHERE action LIKE 'drift.%') ` +
      `AS n`,
  );
  return Number(rows[0]!.n);
}

function failureType(error: unknown): string | undefined {
  let cause = error instanceof WorkflowFailedError ? error.cause : error;
  if (cause instanceof ActivityFailure) cause = cause.cause;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

describe('drift check input', () => {
  let env: DriftEnv;
  beforeAll(async () => {
    env = await createDriftEnv('drift-input');
  }, 120_000);
  afterAll(async () => env?.close());

  it('refuses an unknown tenant on the CLI with one line and writes nothing', async () => {
    const result = await runCli(['drift', 'check', '--tenant', 'no-such-tenant'], env.cliEnv);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining('no-such-tenant')]);
    expect(await written(env)).toBe(0);
  });

  it('refuses an unknown tenant started from the Web UI with TENANT_NOT_FOUND and writes nothing', async () => {
    const run = env.client.workflow.execute('reconcileFleet', {
      taskQueue: env.taskQueue,
      workflowId: `drift-input-unknown-${Date.now()}`,
      args: [{ externalRef: 'no-such-tenant' }],
    });
    const error = await run.catch((e: unknown) => e);
    expect(failureType(error)).toBe('TENANT_NOT_FOUND');
    expect(await written(env)).toBe(0);
  });

  it('refuses a malformed input with INVALID_INPUT', async () => {
    const error = await env.client.workflow
      .execute('reconcileFleet', {
        taskQueue: env.taskQueue,
        workflowId: `drift-input-bad-${Date.now()}`,
        args: [{ pageSize: 0, colour: 'red' }],
      })
      .catch((e: unknown) => e);
    expect(failureType(error)).toBe('INVALID_INPUT');
    expect(await written(env)).toBe(0);
  });

  it('refuses bad policy values in config, every problem listed, before anything starts', async () => {
    const bad = 'key_orphan=fix,balance_unexplained=fix,no_such_kind=report,key_revoked_on_platform=maybe';
    expect(() => loadConfig({ DRIFT_POLICY: bad })).toThrow(ConfigError);
    try {
      loadConfig({ DRIFT_POLICY: bad, DRIFT_QUIET_PERIOD: 'soon' });
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([
        expect.stringMatching(/^DRIFT_POLICY: balance_unexplained/),
        expect.stringMatching(/^DRIFT_POLICY: unknown drift kind/),
        expect.stringMatching(/^DRIFT_POLICY: key_revoked_on_platform/),
        expect.stringMatching(/^DRIFT_QUIET_PERIOD/),
      ]);
    }
    expect(() =>
      buildDriftOptions({
        DRIFT_POLICY: 'key_orphan=fix',
        DRIFT_QUIET_PERIOD: '1h',
        DRIFT_ROTATION_MAX_AGE: '90d',
        DRIFT_SCHEDULE_EVERY: '1h',
      }),
    ).not.toThrow();
    // tenantctl no longer reads DRIFT_POLICY: the worker and the gateway refuse it when they load
    // their configuration (above), so no check ever runs under it.
    expect(await written(env)).toBe(0);
  });

  it('runs a clean check of an empty fleet through the CLI', async () => {
    const result = await runCli(['drift', 'check', '--json'], env.cliEnv);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      scope: 'fleet',
      openTotal: 0,
      totals: { tenantsChecked: 0, skipped: 0 },
    });
  });

  it('runs the fleet check on a schedule made with the CLI (overlap SKIP)', async () => {
    const made = await runCli(['drift', 'schedule', 'create', '--every', '1h'], env.cliEnv);
    expect(made.code, made.stderr).toBe(0);
    try {
      const shown = await runCli(['drift', 'schedule', 'show', '--json'], env.cliEnv);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        scheduleId: DRIFT_SCHEDULE_ID,
        paused: false,
        every: ['3600000ms'],
      });
      const described = await env.client.schedule.getHandle(DRIFT_SCHEDULE_ID).describe();
      expect(described.policies.overlap).toBe('SKIP');
      expect((await runCli(['drift', 'schedule', 'run-now'], env.cliEnv)).code).toBe(0);
      let workflowId: string | undefined;
      for (let i = 0; i < 200 && !workflowId; i++) {
        workflowId = (await env.client.schedule.getHandle(DRIFT_SCHEDULE_ID).describe()).info.recentActions[0]?.action
          .workflow.workflowId;
        if (!workflowId) await new Promise((r) => setTimeout(r, 100));
      }
      const result = (await env.client.workflow.getHandle(workflowId!).result()) as { scope: string };
      expect(result.scope).toBe('fleet');
    } finally {
      await runCli(['drift', 'schedule', 'delete'], env.cliEnv);
    }
  });
  it('over /v1: a viewer or backend may read but not check or schedule, an operator checks and schedules', async () => {
    const operator = generateOperator('drift-operator', 'operator');
    const viewer = generateOperator('drift-viewer', 'viewer');
    const backend = generateOperator('drift-backend', 'backend');
    const gateway = await startOperatorGateway(env, { entries: [operator.entry, viewer.entry, backend.entry] });
    const call = (method: string, path: string, token: string, body?: unknown) =>
      callAs(gateway.url, method, path, token, body);
    try {
      const before = await written(env);
      for (const token of [viewer.token, backend.token]) {
        expect((await call('POST', '/v1/drift/checks', token, { fleet: true })).status).toBe(403);
        expect((await call('POST', '/v1/drift/schedule', token, { every: '1h' })).status).toBe(403);
      }
      const unnamed = await call('POST', '/v1/drift/checks', operator.token, {});
      expect(unnamed).toMatchObject({
        status: 400,
        json: { error: { code: 'INVALID_INPUT', fields: ['externalRef'] } },
      });
      expect(await written(env)).toBe(before);
      expect((await call('GET', '/v1/drift/schedule', viewer.token)).json.data).toEqual({
        schedule: null,
        defaultEvery: '1h',
      });

      const started = await call('POST', '/v1/drift/checks', operator.token, { fleet: true });
      expect(started).toMatchObject({ status: 202, json: { data: { workflowId: 'drift:fleet' } } });
      const done = await waitFor(
        async () => {
          const latest = await call('GET', '/v1/drift/checks/latest', viewer.token);
          return latest.json.data?.run?.status === 'COMPLETED' ? latest.json.data : undefined;
        },
        (value) => value !== undefined,
      );
      expect(done).toMatchObject({ run: { result: { scope: 'fleet' } }, findings: [] });
      expect(await written(env)).toBeGreaterThan(before);
      const findings = await call('GET', '/v1/drift/findings?open=true', viewer.token);
      expect(findings).toMatchObject({ status: 200, json: { data: [] } });
      const badLimit = await call('GET', '/v1/drift/findings?limit=0', viewer.token);
      expect(badLimit).toMatchObject({ status: 400, json: { error: { fields: ['limit'] } } });

      const made = await call('POST', '/v1/drift/schedule', operator.token, { every: '2h' });
      expect(made).toMatchObject({
        status: 200,
        json: { data: { scheduleId: DRIFT_SCHEDULE_ID, outcome: 'created' } },
      });
      try {
        expect((await call('POST', '/v1/drift/schedule/pause', backend.token, {})).status).toBe(403);
        expect((await call('POST', '/v1/drift/schedule/pause', operator.token, {})).status).toBe(200);
        expect((await env.client.schedule.getHandle(DRIFT_SCHEDULE_ID).describe()).state.paused).toBe(true);
      } finally {
        expect((await call('POST', '/v1/drift/schedule/delete', operator.token, {})).status).toBe(200);
      }
      const gone = await call('POST', '/v1/drift/schedule/delete', operator.token, {});
      expect(gone).toMatchObject({ status: 404, json: { error: { code: 'SCHEDULE_NOT_FOUND' } } });
    } finally {
      await gateway.close();
    }
  });
});
