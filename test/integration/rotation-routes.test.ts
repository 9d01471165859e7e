import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { rotationStatusQuery } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { runCli } from '../harness/cli.js';
import { callAs, startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';
import { eventNames } from '../harness/history-split.js';
import { createRotationEnv, keysOf, useKey, waitFor, waitForStage, type RotationEnv } from '../harness/rotation-env.js';

/**
 * The rotation routes tenantctl's rotation commands use, over HTTP with one caller of each role that
 * matters: an operator's decision, cancel and schedule are carried out (the run completes, under the
 * token's name), a role without the permission is 403 and nothing happens to the run or the schedules.
 */
const operator = generateOperator('rot-operator', 'operator');
const viewer = generateOperator('rot-viewer', 'viewer');
const backend = generateOperator('rot-backend', 'backend');
const FAST = ['--quiet-period', '0s', '--propagation-allowance', '0s', '--poll-interval', '200ms'];

describe('rotation routes', () => {
  let env: RotationEnv;
  let gateway: OperatorGateway;
  const call = (method: string, path: string, token: string, body?: unknown) =>
    callAs(gateway.url, method, path, token, body);
  const slowRotation = (externalRef: string) =>
    startRotation(
      env.client,
      { externalRef, options: { quietPeriod: '1h', propagationAllowance: '0s', pollInterval: '300ms' } },
      { taskQueue: env.taskQueue },
    );

  beforeAll(async () => {
    env = await createRotationEnv('rotation-routes');
    gateway = await startOperatorGateway(
      { ...env, secretsKeys: env.cliEnv.SECRETS_KEYS! },
      { entries: [operator.entry, viewer.entry, backend.entry] },
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('carries out an operator decision under the token name and refuses it to a backend, leaving the run as it was', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('rr-decide');
    const handle = await slowRotation('rr-decide');
    await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
    const path = '/v1/tenants/rr-decide/rotations/default';
    const eventsBefore = (await handle.fetchHistory()).events!.length;

    const refused = await call('POST', `${path}/revoke-anyway`, backend.token, { reason: 'not mine to decide' });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'FORBIDDEN' });
    const bad = await call('POST', `${path}/revoke-anyway`, operator.token, { reason: ' ' });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['reason'] });
    const notNow = await call('POST', `${path}/retry-key-create`, operator.token, { reason: 'no key limit here' });
    expect(notNow.status).toBe(409);
    expect(notNow.json.error).toMatchObject({ code: 'DECISION_NOT_APPLICABLE' });
    expect((await handle.fetchHistory()).events!.length).toBe(eventsBefore);
    expect((await handle.query(rotationStatusQuery)).stage).toBe('waiting_for_quiet');

    const running = await call('GET', path, viewer.token);
    expect(running).toMatchObject({ status: 200, json: { data: { run: { status: 'RUNNING', result: null } } } });

    const decided = await call('POST', `${path}/revoke-anyway`, operator.token, { reason: 'consumer moved' });
    expect(decided.status).toBe(200);
    expect(decided.json.data).toMatchObject({ workflowId: 'rotate:rr-decide:default', decision: 'revokeAnyway' });
    const done = await waitFor(async () => {
      const run = await call('GET', path, viewer.token);
      const view = run.json.data?.run as { status: string; result: unknown } | null;
      return view?.status === 'COMPLETED' ? view : undefined;
    }, 'the rotation to complete');
    expect(done.result).toMatchObject({ outcome: 'completed', revokedKeyId: oldKeyId });
    expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
    const { rows } = await env.pool.query(
      `SELECT actor FROM audit_log WHERE external_ref = 'rr-decide' AND action = 'rotation.completed'`,
    );
    expect(rows).toEqual([{ actor: 'operator:rot-operator' }]);

    const late = await call('POST', `${path}/abort`, operator.token, { reason: 'too late' });
    expect(late).toMatchObject({ status: 404, json: { error: { code: 'RUN_NOT_FOUND' } } });
  });

  it('cancels a running rotation for an operator (rolled back) and refuses a viewer', async () => {
    const { subaccountId } = await env.onboard('rr-cancel');
    const handle = await slowRotation('rr-cancel');
    await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
    const path = '/v1/tenants/rr-cancel/rotations/default/cancel';
    expect((await call('POST', path, viewer.token, {})).status).toBe(403);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    const cancelled = await call('POST', path, operator.token, {});
    expect(cancelled.status).toBe(200);
    expect((await handle.describe()).status.name).not.toBe('RUNNING');
    expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(1);
  });

  it('makes, triggers and deletes a schedule for an operator; a viewer lists but cannot make or trigger one', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('rr-sched');
    const body = {
      externalRef: 'rr-sched',
      every: '30d',
      options: { quietPeriod: '0s', propagationAllowance: '0s', pollInterval: '200ms' },
    };
    const ids = async () =>
      (
        (await call('GET', '/v1/rotation-schedules', viewer.token)).json.data as unknown as Array<{
          scheduleId: string;
        }>
      )
        .map((s) => s.scheduleId)
        .filter((id) => id.includes('rr-sched'));

    expect((await call('POST', '/v1/rotation-schedules', viewer.token, body)).status).toBe(403);
    expect(await ids()).toEqual([]);
    const bad = await call('POST', '/v1/rotation-schedules', operator.token, { ...body, every: 'monthly' });
    expect(bad).toMatchObject({ status: 400, json: { error: { code: 'INVALID_INPUT', fields: ['every'] } } });
    expect(await ids()).toEqual([]);

    const made = await call('POST', '/v1/rotation-schedules', operator.token, body);
    expect(made).toMatchObject({ status: 200, json: { data: { scheduleId: 'rotation:rr-sched:default' } } });
    expect(await waitFor(async () => ((await ids()).length ? await ids() : undefined), 'the schedule')).toEqual([
      'rotation:rr-sched:default',
    ]);
    const control = (command: string, token: string) =>
      call('POST', `/v1/rotation-schedules/${encodeURIComponent('rotation:rr-sched:default')}/${command}`, token, {});
    expect((await control('run-now', backend.token)).status).toBe(403);
    expect((await control('run-now', operator.token)).status).toBe(200);
    await waitFor(
      async () => (keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status === 'revoked' ? true : undefined),
      'the scheduled rotation to revoke the old key',
    );
    expect((await control('delete', operator.token)).status).toBe(200);
    expect(await control('delete', operator.token)).toMatchObject({
      status: 404,
      json: { error: { code: 'SCHEDULE_NOT_FOUND' } },
    });
  });

  it('rotate-key --wait follows the run through the gateway and prints its result as before', async () => {
    await env.onboard('rr-wait');
    const cli = await runCli(['rotate-key', 'rr-wait', '--emergency', '--reason', 'first try', '--wait'], env.cliEnv);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout.trim()).toMatch(/^rotation completed: slot default g1→g2, current key \S+ \(\S+\)$/);
    const json = await runCli(['rotate-key', 'rr-wait', '--wait', '--json', ...FAST], env.cliEnv);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      workflowId: 'rotate:rr-wait:default',
      started: true,
      result: { outcome: 'completed', fromGeneration: 2, toGeneration: 3 },
    });
  });

  it('rotate-key --wait through a gate that waits: the looks are one watch of the key records, no timer; the old key goes after its quiet period', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('rr-watch');
    expect(await useKey(env, await env.token('rr-watch'))).toBe(200);
    const gate = ['--quiet-period', '2s', '--propagation-allowance', '0s', '--poll-interval', '200ms'];
    const cli = await runCli(['rotate-key', 'rr-watch', '--wait', '--json', ...gate], env.cliEnv);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({
      workflowId: 'rotate:rr-watch:default',
      result: { outcome: 'completed', quietCheck: { method: 'last-use' } },
    });
    const names = eventNames(await env.client.workflow.getHandle('rotate:rr-watch:default').fetchHistory());
    expect(names).not.toContain('TIMER_STARTED');
    expect(names).toContain('core_patch');
    const history = await env.client.workflow.getHandle('rotate:rr-watch:default').fetchHistory();
    const scheduled = (history.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(scheduled.filter((n) => n === 'watchKeyUsage').length).toBeGreaterThanOrEqual(1);
    expect(scheduled.filter((n) => n === 'observeKeyUsage')).toEqual([]);
    const old = keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!;
    expect(old.status).toBe('revoked');
    expect(Date.parse(old.revokedAt!) - Date.parse(old.lastUsedAt!)).toBeGreaterThanOrEqual(2_000);
  });

  it('refuses an adoption to a viewer and names the rule for a tenant without unmanaged keys', async () => {
    await env.onboard('rr-adopt');
    expect((await call('POST', '/v1/tenants/rr-adopt/adopt', viewer.token, {})).status).toBe(403);
    const none = await call('POST', '/v1/tenants/rr-adopt/adopt', operator.token, {});
    expect(none).toMatchObject({ status: 400, json: { error: { code: 'INVALID_INPUT' } } });
    expect(await call('GET', '/v1/tenants/rr-adopt/rotations/default', viewer.token)).toMatchObject({
      status: 200,
      json: { data: { run: null } },
    });
  });
});
