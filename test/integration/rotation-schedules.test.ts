import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { findOrBuildTemporalCli } from '../../src/infra/temporal-cli.js';
import type { rotateFleet } from '../../workflows/keys/rotate-fleet.js';
import { runCli } from '../harness/cli.js';
import { createRotationEnv, keysOf, waitFor, type RotationEnv } from '../harness/rotation-env.js';

const run = promisify(execFile);
const FAST = ['--quiet-period', '0s', '--propagation-allowance', '0s', '--poll-interval', '200ms'];

async function temporalScheduleIds(): Promise<string[]> {
  const cli = await findOrBuildTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH, build: false });
  if (!cli) throw new Error('no temporal CLI found (the harness found one to start the dev server)');
  const { stdout } = await run(cli, [
    'schedule',
    'list',
    '--address',
    inject('temporalAddress'),
    '--namespace',
    inject('temporalNamespace'),
    '--output',
    'json',
  ]);
  const parsed = JSON.parse(stdout || '[]') as Array<{ scheduleId: string }> | null;
  return (parsed ?? []).map((s) => s.scheduleId);
}

describe('rotation schedules and the fleet', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('rotation-schedules');
  });
  afterAll(async () => env?.close());

  it('makes a schedule with the CLI that `temporal schedule list` shows and that rotates when triggered', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('sched-1');
    const made = await runCli(
      ['rotation', 'schedule', 'sched-1', '--every', '30d', '--jitter', '6h', ...FAST],
      env.cliEnv,
    );
    expect(made.code, made.stderr).toBe(0);
    await waitFor(
      async () => ((await temporalScheduleIds()).includes('rotation:sched-1:default') ? true : undefined),
      'the schedule in `temporal schedule list`',
    );

    const listed = await runCli(['rotation', 'list', '--json'], env.cliEnv);
    expect(JSON.parse(listed.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ scheduleId: 'rotation:sched-1:default', paused: false })]),
    );

    const triggered = await runCli(['rotation', 'run-now', 'sched-1'], env.cliEnv);
    expect(triggered.code, triggered.stderr).toBe(0);
    const rotation = env.client.workflow.getHandle('rotate:sched-1:default');
    await waitFor(
      async () => ((await rotation.describe()).status.name === 'COMPLETED' ? true : undefined),
      'the scheduled rotation to complete',
    );
    expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');

    for (const command of ['pause', 'unpause', 'delete']) {
      const result = await runCli(['rotation', command, 'sched-1'], env.cliEnv);
      expect(result.code, result.stderr).toBe(0);
    }
    const missing = await runCli(['rotation', 'pause', 'sched-1'], env.cliEnv);
    expect(missing.code).not.toBe(0);
  });

  it('skips a slot that is already rotating rather than running two rotations of it', async () => {
    await env.onboard('sched-2');
    const manual = await runCli(
      ['rotate-key', 'sched-2', '--quiet-period', '1h', '--propagation-allowance', '0s'],
      env.cliEnv,
    );
    expect(manual.code, manual.stderr).toBe(0);
    const launcher = await env.client.workflow.start('rotateTenantKeyOnSchedule', {
      taskQueue: env.taskQueue,
      workflowId: 'rotate-scheduled:sched-2:default-test',
      args: [{ externalRef: 'sched-2' }],
    });
    expect(await launcher.result()).toMatchObject({ outcome: 'skipped_already_running' });
    await env.client.workflow.getHandle('rotate:sched-2:default').cancel();
  });

  it('rotates every active tenant of the fleet, page by page with continue-as-new', async () => {
    const refs = ['fleet-a', 'fleet-b', 'fleet-c', 'fleet-d', 'fleet-e'];
    const tenants = await Promise.all(refs.map(async (ref) => ({ ref, ...(await env.onboard(ref)) })));
    const handle = await env.client.workflow.start<typeof rotateFleet>('rotateFleet', {
      taskQueue: env.taskQueue,
      workflowId: 'rotate-fleet:test',
      args: [
        {
          concurrency: 2,
          pageSize: 3,
          // Each waits out a 2 s allowance: released from the bound of 2 while it waits (issue 34).
          options: { quietPeriod: '0s', propagationAllowance: '2s', pollInterval: '2s' },
        },
      ],
    });
    const totals = await handle.result();
    // The other tenants of this file (already rotated or cancelled) are active too: count ours.
    expect(totals.failed).toBe(0);
    // Every rotation released while it waited was counted when it settled, in whichever run was current.
    expect(totals.waiting).toBe(0);
    expect(totals.completed + totals.held).toBe(totals.started);
    expect(totals.started).toBeGreaterThanOrEqual(refs.length);
    expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
    for (const t of tenants) {
      const keys = keysOf(env, t.subaccountId);
      expect(keys.find((k) => k.id === t.keyId)!.status, t.ref).toBe('revoked');
      expect(
        keys.filter((k) => k.status === 'active'),
        t.ref,
      ).toHaveLength(1);
    }

    const fleetSchedule = await runCli(
      ['rotation', 'schedule', '--fleet', '--every', '30d', '--concurrency', '10', ...FAST],
      env.cliEnv,
    );
    expect(fleetSchedule.code, fleetSchedule.stderr).toBe(0);
    await waitFor(
      async () => ((await temporalScheduleIds()).includes('rotation-fleet:default') ? true : undefined),
      'the fleet schedule',
    );

    // As an operator runs it: triggered from the CLI, the schedule's fleet run rotates every tenant once more.
    const activeBefore = new Map(
      tenants.map((t) => [t.ref, keysOf(env, t.subaccountId).find((k) => k.status === 'active')!.id]),
    );
    const triggered = await runCli(['rotation', 'run-now', '--fleet'], env.cliEnv);
    expect(triggered.code, triggered.stderr).toBe(0);
    const schedule = env.client.schedule.getHandle('rotation-fleet:default');
    const started = await waitFor(
      async () => (await schedule.describe()).info.recentActions[0]?.action.workflow,
      'the fleet schedule to start its run',
    );
    expect(started.workflowId).toMatch(/^rotate-fleet:default/);
    const scheduled = await env.client.workflow
      .getHandle<typeof rotateFleet>(started.workflowId, undefined, {
        firstExecutionRunId: started.firstExecutionRunId,
      })
      .result();
    expect(scheduled.failed).toBe(0);
    expect(scheduled.waiting ?? 0).toBe(0); // absent when no rotation waited out a gate (no allowance here)
    expect(scheduled.completed).toBeGreaterThanOrEqual(refs.length);
    for (const t of tenants) {
      const keys = keysOf(env, t.subaccountId);
      expect(keys.find((k) => k.id === activeBefore.get(t.ref))!.status, t.ref).toBe('revoked');
      expect(
        keys.filter((k) => k.status === 'active'),
        t.ref,
      ).toHaveLength(1);
    }
    expect((await runCli(['rotation', 'delete', '--fleet'], env.cliEnv)).code).toBe(0);
  });
});
