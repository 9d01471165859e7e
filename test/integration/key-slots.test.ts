import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listSlotKeys, startKeyIssue, startKeyRevoke } from '../../src/client/keys/key-slots.js';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { scheduleTenantRotation } from '../../src/client/keys/rotation-schedules.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { NoActiveKeyError } from '../../src/client/keys/reveal-key.js';
import { keyIssueStatusQuery, retryKeyIssueUpdate } from '../../workflows/keys/key-slot-messages.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { TEST_API_TOKEN, listenGatewayOver } from '../harness/gateway-app.js';
import { historyJson } from '../harness/onboarding-checks.js';
import { createRotationEnv, keepUsing, keysOf, useKey, waitFor, type RotationEnv } from '../harness/rotation-env.js';

function parseOperators(list: string) {
  const parsed = parseOperatorList(list);
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  return parsed.operators;
}

const fast = { quietPeriod: '1500ms', pollInterval: '250ms', quietDeadline: '20s', overlapWindow: '1s' };

describe('keys per workload and environment (slots)', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('key-slots');
  });
  afterAll(async () => env?.close());

  const deps = () => ({ client: env.client, pool: env.pool });
  const q = { taskQueue: '' };
  const issue = async (externalRef: string, slot: string) =>
    (await startKeyIssue(deps(), { externalRef, slot }, { ...q, taskQueue: env.taskQueue })).result();

  it(
    'issues a slot key (sealed, verified, recorded), gives the same key on a second ' + 'issue, and reveals it by slot',
    async () => {
      const { subaccountId } = await env.onboard('slots-1');
      const first = await issue('slots-1', 'ci');
      expect(first).toMatchObject({ outcome: 'issued', slot: 'ci', generation: 1 });
      const again = await issue('slots-1', 'ci');
      expect(again).toMatchObject({ outcome: 'existing', keyId: first.keyId, fingerprint: first.fingerprint });
      const token = await env.token('slots-1', 'ci');
      expect(await useKey(env, token)).toBe(200);
      expect(await env.token('slots-1')).not.toBe(token);
      const listed = await listSlotKeys(env.pool, 'slots-1');
      expect(listed.map((k) => [k.slot, k.status, k.verified])).toEqual([
        ['ci', 'active', true],
        ['default', 'active', true],
      ]);
      expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(2);
      const history = await historyJson(env.client, `key:slots-1:ci`);
      expect(history).not.toMatch(/svsk_[A-Za-z0-9]/);
    },
  );

  it('waits at the active-key limit (the actionable state of rotation) and issues once a key is revoked', async () => {
    const { subaccountId } = await env.onboard('slots-limit');
    await issue('slots-limit', 'a');
    await issue('slots-limit', 'b'); // 3 active keys: the simulator's tenant limit
    const handle = await startKeyIssue(
      deps(),
      { externalRef: 'slots-limit', slot: 'c', options: { keyLimitRetryInterval: '1h' } },
      { taskQueue: env.taskQueue },
    );
    const atLimit = await waitFor(async () => {
      const s = await handle.query(keyIssueStatusQuery);
      return s.stage === 'key_limit' ? s : undefined;
    }, 'key_limit');
    expect(atLimit.activeKeys).toHaveLength(3);
    // A malformed decision is refused by the Update's validator, naming the field.
    await expect(
      handle.executeUpdate(retryKeyIssueUpdate, { args: [{ operator: '', reason: 'x' }] }),
    ).rejects.toMatchObject({ cause: { type: 'INVALID_DECISION', message: expect.stringMatching(/operator/) } });
    const revoked = await (
      await startKeyRevoke(
        deps(),
        { externalRef: 'slots-limit', slot: 'a', force: true, operator: 'ops', reason: 'free a slot for c' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect(revoked).toMatchObject({ outcome: 'revoked', forced: true });
    await handle.executeUpdate(retryKeyIssueUpdate, { args: [{ operator: 'ops', reason: 'slot a revoked' }] });
    expect(await handle.result()).toMatchObject({ outcome: 'issued', slot: 'c' });
    expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(3);
    const { rows } = await env.pool.query(
      `SELECT action, actor FROM audit_log WHERE external_ref = 'slots-limit' AND action = 'key.revoked_forced'`,
    );
    expect(rows).toEqual([{ action: 'key.revoked_forced', actor: 'operator:ops' }]);
  });

  it('refuses to revoke a key the platform shows in use, and revokes it once it is quiet', async () => {
    const { subaccountId } = await env.onboard('slots-busy');
    const { keyId } = await issue('slots-busy', 'web');
    const consumer = keepUsing(env, await env.token('slots-busy', 'web'), 150);
    try {
      const refused = await (
        await startKeyRevoke(
          deps(),
          { externalRef: 'slots-busy', slot: 'web', options: fast },
          { taskQueue: env.taskQueue },
        )
      ).result();
      expect(refused).toMatchObject({ outcome: 'refused', keyId });
      expect(refused.verdict).toMatch(/in use/);
      expect(keysOf(env, subaccountId).find((k) => k.id === keyId)!.status).toBe('active');
      expect((await listSlotKeys(env.pool, 'slots-busy')).find((k) => k.slot === 'web')!.status).toBe('active');
    } finally {
      await consumer.stop();
    }
    const done = await (
      await startKeyRevoke(
        deps(),
        { externalRef: 'slots-busy', slot: 'web', options: fast },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect(done).toMatchObject({ outcome: 'revoked', keyId, forced: false });
    const key = keysOf(env, subaccountId).find((k) => k.id === keyId)!;
    expect(key.status).toBe('revoked');
    expect(Date.parse(key.revokedAt!) - Date.parse(key.lastUsedAt!)).toBeGreaterThanOrEqual(1_500);
  });

  it('rotates a non-default slot by overlap and leaves the default slot alone', async () => {
    const { subaccountId, keyId: defaultKey } = await env.onboard('slots-rot');
    const { keyId: oldKey } = await issue('slots-rot', 'prod-web');
    const handle = await startRotation(
      env.client,
      {
        externalRef: 'slots-rot',
        slot: 'prod-web',
        options: { quietPeriod: '1s', propagationAllowance: '1s', pollInterval: '250ms' },
      },
      { taskQueue: env.taskQueue },
    );
    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'completed', slot: 'prod-web', fromGeneration: 1, toGeneration: 2 });
    const active = keysOf(env, subaccountId)
      .filter((k) => k.status === 'active')
      .map((k) => k.id);
    expect(active.sort()).toEqual([defaultKey, result.keyId].sort());
    expect(active).not.toContain(oldKey);
  });

  it('schedules rotation per slot and closes a tenant with every slot revoked', async () => {
    const { subaccountId } = await env.onboard('slots-close');
    await issue('slots-close', 'worker');
    const scheduled = await scheduleTenantRotation(
      env.client,
      { externalRef: 'slots-close', slot: 'worker' },
      { every: '30d' },
      env.taskQueue,
    );
    expect(scheduled.scheduleId).toBe('rotation:slots-close:worker');
    const described = await env.client.schedule.getHandle(scheduled.scheduleId).describe();
    expect(described.action).toMatchObject({ workflowType: 'rotateTenantKeyOnSchedule' });
    await env.client.schedule.getHandle(scheduled.scheduleId).delete();
    const closed = await startLifecycle(
      env.client,
      'close',
      { externalRef: 'slots-close', reason: 'customer left', options: { pollInterval: '300ms' } },
      { taskQueue: env.taskQueue },
    );
    await closed.result();
    expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toEqual([]);
    const { rows } = await env.pool.query(
      `SELECT slot, status FROM tenant_keys WHERE external_ref = 'slots-close' ORDER BY slot`,
    );
    expect(rows).toEqual([
      { slot: 'default', status: 'revoked' },
      { slot: 'worker', status: 'revoked' },
    ]);
  });

  it('refuses bad input with one clear error and starts nothing', async () => {
    await env.onboard('slots-bad');
    const attempts: Array<[() => Promise<unknown>, RegExp]> = [
      [() => startKeyIssue(deps(), { externalRef: 'slots-bad', slot: 'Prod_Web' }, q), /slot: must be 1-32/],
      [() => startKeyIssue(deps(), { externalRef: 'slots-bad', slot: '' }, q), /slot: /],
      [() => startKeyIssue(deps(), { externalRef: 'slots-bad' }, q), /slot: is required/],
      [
        () => startKeyRevoke(deps(), { externalRef: 'slots-bad', slot: 'default', force: true, operator: 'ops' }, q),
        /reason: is required with force/,
      ],
    ];
    for (const [attempt, message] of attempts) {
      const error = await attempt().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(message);
    }
    const unknownSlot = await startKeyRevoke(deps(), { externalRef: 'slots-bad', slot: 'nope' }, q).catch((e) => e);
    expect(unknownSlot).toBeInstanceOf(NoActiveKeyError);
    const { rows } = await env.pool.query(`SELECT slot FROM tenant_keys WHERE external_ref = 'slots-bad'`);
    expect(rows).toEqual([{ slot: 'default' }]);
    for (const id of ['key-revoke:slots-bad:nope', 'key-revoke:slots-bad:default'])
      await expect(env.client.workflow.getHandle(id).describe()).rejects.toMatchObject({
        name: 'WorkflowNotFoundError',
      });
  });

  it('works from tenantctl as an operator runs it', async () => {
    await env.onboard('slots-cli');
    const issued = await runCli(['key', 'issue', 'slots-cli', '--slot', 'batch', '--wait', '--json'], env.cliEnv);
    expect(issued.code, issued.stderr).toBe(0);
    expect(JSON.parse(issued.stdout)).toMatchObject({ result: { outcome: 'issued', slot: 'batch' } });
    const listed = await runCli(['key', 'list', 'slots-cli', '--json'], env.cliEnv);
    expect(JSON.parse(listed.stdout).map((k: { slot: string }) => k.slot)).toEqual(['batch', 'default']);
    const revealed = await runCli(
      ['key', 'reveal', 'slots-cli', '--slot', 'batch', '--reason', 'hand to the CI'],
      env.cliEnv,
    );
    expect(revealed.stdout.trim()).toBe(await env.token('slots-cli', 'batch'));
    const bad = await runCli(['key', 'issue', 'slots-cli', '--slot', 'Bad Slot'], env.cliEnv);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/slot: must be 1-32 characters/);
    const noReason = await runCli(['key', 'revoke', 'slots-cli', '--slot', 'batch', '--force'], env.cliEnv);
    // Who forces is the token's name (the harness operator, ops): only the reason is the caller's to give.
    expect(noReason.code).toBe(2);
    expect(noReason.stderr.trim()).toMatch(/^error: reason: is required with force/);
    const revoked = await runCli(
      ['key', 'revoke', 'slots-cli', '--slot', 'batch', '--force', '--reason', 'CI retired', '--json'],
      env.cliEnv,
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ result: { outcome: 'revoked', forced: true } });
    const { rows } = await env.pool.query(
      `SELECT actor FROM audit_log WHERE external_ref = 'slots-cli' AND action = 'key.revoked_forced'`,
    );
    expect(rows).toEqual([{ actor: expect.stringMatching(/ops$/) as unknown }]);
  });

  it('works over HTTP against a listening gateway, and the started runs complete', async () => {
    await env.onboard('slots-http');
    const viewer = generateOperator('slots-viewer', 'viewer');
    const { gateway, url } = await listenGatewayOver(
      { ...env, secretsKeys: env.cliEnv.SECRETS_KEYS! },
      { operators: createOperatorDirectory(parseOperators(viewer.entry)) },
    );
    try {
      const headers = { authorization: `Bearer ${TEST_API_TOKEN}`, 'content-type': 'application/json' };
      // A viewer may read the keys and a run's status, not start one: 403, and no run exists.
      const asViewer = { ...headers, authorization: `Bearer ${viewer.token}` };
      const refused = await fetch(`${url}/v1/tenants/slots-http/keys/staging/issue`, {
        method: 'POST',
        headers: asViewer,
        body: '{}',
      });
      expect(refused.status).toBe(403);
      const before = (await (
        await fetch(`${url}/v1/tenants/slots-http/keys/staging/issue`, { headers: asViewer })
      ).json()) as {
        data: { run: unknown };
      };
      expect(before.data.run).toBeNull();
      const started = await fetch(`${url}/v1/tenants/slots-http/keys/staging/issue`, {
        method: 'POST',
        headers,
        body: '{}',
      });
      expect(started.status).toBe(202);
      const { data } = (await started.json()) as { data: { workflowId: string } };
      expect(data.workflowId).toBe('key:slots-http:staging');
      // The run's status route is what a caller polls after the 202: RUNNING, then COMPLETED with the result.
      const run = await waitFor(async () => {
        const answer = (await (await fetch(`${url}/v1/tenants/slots-http/keys/staging/issue`, { headers })).json()) as {
          data: { run: { status: string; result: unknown } | null };
        };
        return answer.data.run?.status === 'RUNNING' ? undefined : answer.data.run;
      }, 'the issue run to end');
      expect(run?.status).toBe('COMPLETED');
      expect(run?.result).toMatchObject({ outcome: 'issued', slot: 'staging', generation: 1 });
      expect(await env.client.workflow.getHandle(data.workflowId).result()).toMatchObject({ outcome: 'issued' });
      const none = await fetch(`${url}/v1/tenants/slots-http/keys/never/revoke`, { headers });
      expect(((await none.json()) as { data: unknown }).data).toMatchObject({ run: null });
      const listed = (await (await fetch(`${url}/v1/tenants/slots-http/keys`, { headers })).json()) as {
        data: { keys: Array<{ slot: string; status: string }> };
      };
      expect(listed.data.keys.map((k) => [k.slot, k.status])).toEqual([
        ['default', 'active'],
        ['staging', 'active'],
      ]);
      const bad = await fetch(`${url}/v1/tenants/slots-http/keys/BAD/issue`, { method: 'POST', headers, body: '{}' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: 'INVALID_INPUT', fields: ['slot'] } });
      const unknown = await fetch(`${url}/v1/tenants/slots-http/keys/none/revoke`, {
        method: 'POST',
        headers,
        body: '{}',
      });
      expect(unknown.status).toBe(404);
      const revoke = await fetch(`${url}/v1/tenants/slots-http/keys/staging/revoke`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ options: fast }),
      });
      expect(revoke.status).toBe(202);
      const revokeRun = (await revoke.json()) as { data: { workflowId: string } };
      const outcome = await env.client.workflow.getHandle(revokeRun.data.workflowId).result();
      expect(outcome).toMatchObject({ outcome: 'revoked', slot: 'staging' });
    } finally {
      await gateway.app.close();
    }
  });

  it('takes a decision for an issue at the key limit over HTTP: keys.manage, the token names who, refusals name why', async () => {
    const { subaccountId } = await env.onboard('slots-decide');
    await issue('slots-decide', 'a');
    await issue('slots-decide', 'b'); // 3 active keys: the simulator's tenant limit
    const viewer = generateOperator('decide-viewer', 'viewer');
    const backend = generateOperator('decide-backend', 'backend');
    const { gateway, url } = await listenGatewayOver(
      { ...env, secretsKeys: env.cliEnv.SECRETS_KEYS! },
      { operators: createOperatorDirectory(parseOperators(`${viewer.entry},${backend.entry}`)) },
    );
    try {
      const as = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
      const post = (path: string, body: unknown, token = backend.token) =>
        fetch(`${url}/v1/tenants/slots-decide/keys/${path}`, {
          method: 'POST',
          headers: as(token),
          body: JSON.stringify(body),
        });
      const errorOf = async (response: Response) =>
        ((await response.json()) as { error: { code: string; message: string } }).error;
      // No issue runs for slot c yet: nothing to decide for.
      const none = await post('c/issue/abort', { reason: 'nothing there' });
      expect(none.status).toBe(404);
      expect(await errorOf(none)).toMatchObject({
        code: 'RUN_NOT_FOUND',
        message: expect.stringMatching(/nothing is waiting/),
      });
      // A caller may not hand a run its carried state: refused by name, nothing started.
      const carried = await post('c/issue', { continued: { begun: { subaccountId: 'sa_other', generation: 9 } } });
      expect(carried.status).toBe(400);
      expect(await errorOf(carried)).toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringMatching(/continued: set only by a run/),
      });
      expect(
        await (await fetch(`${url}/v1/tenants/slots-decide/keys/c/issue`, { headers: as(backend.token) })).json(),
      ).toMatchObject({
        data: { run: null },
      });

      const started = await post('c/issue', { options: { keyLimitRetryInterval: '1h' } });
      expect(started.status).toBe(202);
      const waiting = await waitFor(async () => {
        const answer = (await (
          await fetch(`${url}/v1/tenants/slots-decide/keys?slot=c`, { headers: as(viewer.token) })
        ).json()) as {
          data: { keys: Array<{ status: string; waiting: { stage: string; decisions: string[] } | null }> };
        };
        return answer.data.keys[0]?.waiting ?? undefined;
      }, 'slot c to show its wait');
      expect(waiting).toMatchObject({ stage: 'key_limit', decisions: ['retryKeyCreate', 'abortKeyIssue'] });

      // A viewer may read the wait, not decide; a bad reason or an unknown decision sends nothing.
      expect((await post('c/issue/abort', { reason: 'x' }, viewer.token)).status).toBe(403);
      const noReason = await post('c/issue/abort', { reason: '' });
      expect(noReason.status).toBe(400);
      expect(await errorOf(noReason)).toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringMatching(/reason: /),
      });
      const someoneElse = await post('c/issue/abort', { reason: 'x', operator: 'alice' });
      expect(someoneElse.status).toBe(400);
      expect((await post('c/issue/retry', { reason: 'x' })).status).toBe(404);

      // A backend that issued the key may give the issue up; the audit names the token's identity.
      const aborted = await post('c/issue/abort', { reason: 'the CI slot is not needed after all' });
      expect(aborted.status).toBe(200);
      expect(((await aborted.json()) as { data: unknown }).data).toMatchObject({
        workflowId: 'key:slots-decide:c',
        decision: 'abortKeyIssue',
        stage: 'key_limit',
      });
      await expect(env.client.workflow.getHandle('key:slots-decide:c').result()).rejects.toThrow();
      const { rows } = await env.pool.query(
        `SELECT actor FROM audit_log WHERE external_ref = 'slots-decide' AND actor LIKE 'operator:%'`,
      );
      expect(rows).toEqual([{ actor: 'operator:decide-backend' }]);
      // The run has ended: a decision now does not apply (404, nothing is waiting).
      const late = await post('c/issue/retry-key-create', { reason: 'too late' });
      expect(late.status).toBe(404);
      expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(3);
    } finally {
      await gateway.app.close();
    }
  });

  it('fails an issue for a tenant that is not active, naming why', async () => {
    const error = await startKeyIssue(deps(), { externalRef: 'no-such-tenant', slot: 'ci' }, q).catch((e) => e);
    expect((error as Error).name).toBe('TenantNotFoundError');
    expect(error).not.toBeInstanceOf(WorkflowFailedError);
  });
});

describe('slot revoke where the platform shows no last use', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('key-slots-nolastuse', { choices: { showLastUsed: false } });
  });
  afterAll(async () => env?.close());

  it('waits the overlap window instead of a quiet check, then revokes', async () => {
    const { subaccountId } = await env.onboard('nolast-1');
    const deps = { client: env.client, pool: env.pool };
    const { keyId } = await (
      await startKeyIssue(deps, { externalRef: 'nolast-1', slot: 'ci' }, { taskQueue: env.taskQueue })
    ).result();
    const started = Date.now();
    const result = await (
      await startKeyRevoke(
        deps,
        { externalRef: 'nolast-1', slot: 'ci', options: { ...fast, overlapWindow: '2s' } },
        { taskQueue: env.taskQueue },
      )
    ).result();
    expect(result).toMatchObject({ outcome: 'revoked', keyId });
    expect(result.verdict).toMatch(/overlap window/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
    expect(keysOf(env, subaccountId).find((k) => k.id === keyId)!.status).toBe('revoked');
  });
});
