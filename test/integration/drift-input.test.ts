import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DRIFT_SCHEDULE_ID } from '../../src/domain/ids.js';
import { buildDriftOptions } from '../../activities/drift/options.js';
import { runCli } from '../harness/cli.js';
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
    const result = await runCli(['drift', 'check'], { ...env.cliEnv, DRIFT_POLICY: 'balance_unexplained=fix' });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^error: DRIFT_POLICY: balance_unexplained: has no safe fix/),
    ]);
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
});
