import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenantStatusKey } from '../../src/domain/search-attributes.js';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { revokeAnywayUpdate } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { runCli } from '../harness/cli.js';
import { failureTypeOf, historyJson } from '../harness/onboarding-checks.js';
import {
  createRotationEnv,
  keepUsing,
  keysOf,
  useKey,
  waitForStage,
  type RotationEnv,
} from '../harness/rotation-env.js';

describe('key rotation with a quiet gate', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('rotation');
  });
  afterAll(async () => env?.close());

  it('keeps the old key alive while it is used after deploy and revokes it once it goes quiet', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('quiet-1');
    const oldToken = await env.token('quiet-1');
    const options = { quietPeriod: '2s', propagationAllowance: '4s', pollInterval: '300ms', quietDeadline: '60s' };
    const handle = await startRotation(env.client, { externalRef: 'quiet-1', options }, { taskQueue: env.taskQueue });
    await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
    // A consumer still on the old key for a moment after deploy, inside the propagation allowance.
    const consumer = keepUsing(env, oldToken, 150);
    await new Promise((r) => setTimeout(r, 1_500));
    await consumer.stop();
    const lastUse = keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.lastUsedAt!;

    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'completed', fromGeneration: 1, toGeneration: 2, revokedKeyId: oldKeyId });
    expect(result.quietCheck.method).toBe('last-use');
    const keys = keysOf(env, subaccountId);
    const old = keys.find((k) => k.id === oldKeyId)!;
    expect(old.status).toBe('revoked');
    expect(old.lastUsedAt).toBe(lastUse);
    // The gate's promise, on the platform's own clock: revoked only after a full quiet period.
    expect(Date.parse(old.revokedAt!) - Date.parse(lastUse)).toBeGreaterThanOrEqual(2_000);
    expect(keys.filter((k) => k.status === 'active').map((k) => k.id)).toEqual([result.keyId]);
    expect(await useKey(env, oldToken)).toBe(401);
    expect(await useKey(env, await env.token('quiet-1'))).toBe(200);

    const { rows } = await env.pool.query(
      `SELECT generation, status FROM tenant_keys WHERE external_ref = 'quiet-1' ORDER BY generation`,
    );
    expect(rows).toEqual([
      { generation: 1, status: 'revoked' },
      { generation: 2, status: 'active' },
    ]);
    const { rows: rotations } = await env.pool.query(
      `SELECT state, from_generation, to_generation FROM key_rotations WHERE external_ref = 'quiet-1'`,
    );
    expect(rotations).toEqual([{ state: 'completed', from_generation: 1, to_generation: 2 }]);

    const notices = env.notify.received.filter((n) => n.body.includes('"quiet-1"'));
    expect(notices.map((n) => [n.event, n.signatureValid])).toEqual([['keyRotated', true]]);
    expect(JSON.parse(notices[0]!.body)).toMatchObject({
      keyId: result.keyId,
      fingerprint: result.fingerprint,
      generation: 2,
      otherKeyId: oldKeyId,
    });
    for (const text of [
      ...env.notify.received.map((n) => n.body),
      await historyJson(env.client, handle.workflowId),
      env.logs.join('\n'),
    ]) {
      expect(text).not.toMatch(/svsk_[A-Za-z0-9]/);
    }
  });

  it('holds a key that stays in use, never revokes it, and on abort keeps it and revokes the new key', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('busy-1');
    const oldToken = await env.token('busy-1');
    const consumer = keepUsing(env, oldToken, 150);
    try {
      const options = { quietPeriod: '2s', propagationAllowance: '1s', pollInterval: '300ms', quietDeadline: '60s' };
      const handle = await startRotation(env.client, { externalRef: 'busy-1', options }, { taskQueue: env.taskQueue });
      const held = await waitForStage(env, handle.workflowId, 'held');
      expect(held.heldReason).toBe('used_after_allowance');
      expect(held.waitingFor).toMatch(/revokeAnyway/);
      expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('active');
      const description = await handle.describe();
      expect(description.typedSearchAttributes.get(tenantStatusKey)).toBe('rotation_held');

      const status = await runCli(['status', 'busy-1'], env.cliEnv);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/rotation default g1→g2: held/);

      const abort = await runCli(['rotation', 'abort', 'busy-1', '--reason', 'consumer not migrated'], env.cliEnv);
      expect(abort.code, abort.stderr).toBe(0);
      const result = await handle.result();
      expect(result.outcome).toBe('aborted');
      const keys = keysOf(env, subaccountId);
      expect(keys.filter((k) => k.status === 'active').map((k) => k.id)).toEqual([oldKeyId]);
      expect(await env.token('busy-1')).toBe(oldToken);
      expect(env.notify.received.filter((n) => n.body.includes('"busy-1"')).map((n) => n.event)).toEqual([
        'keyRotated',
        'keyRotationAborted',
      ]);
      const { rows } = await env.pool.query(
        `SELECT actor FROM audit_log WHERE external_ref = 'busy-1' AND action = 'rotation.aborted'`,
      );
      // Who decided is the token's name (the harness admin), not a flag.
      expect(rows).toEqual([{ actor: 'operator:ops' }]);
    } finally {
      await consumer.stop();
    }
  });

  it('holds at the quiet deadline and revokes anyway when an operator says so', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('busy-2');
    const consumer = keepUsing(env, await env.token('busy-2'), 150);
    try {
      const options = { quietPeriod: '2s', propagationAllowance: '1m', pollInterval: '300ms', quietDeadline: '2s' };
      const handle = await startRotation(env.client, { externalRef: 'busy-2', options }, { taskQueue: env.taskQueue });
      const held = await waitForStage(env, handle.workflowId, 'held');
      expect(held.heldReason).toBe('deadline');
      await handle.executeUpdate(revokeAnywayUpdate, {
        args: [{ operator: 'dave', reason: 'consumer confirmed migrated' }],
      });
      const result = await handle.result();
      expect(result.outcome).toBe('completed');
      expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
    } finally {
      await consumer.stop();
    }
  });

  it('revokes a leaked key within one poll of deploy, however busy it is', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('leak-1');
    const consumer = keepUsing(env, await env.token('leak-1'), 100);
    try {
      const handle = await startRotation(
        env.client,
        { externalRef: 'leak-1', emergency: true, reason: 'token in a public repo', options: { pollInterval: '10s' } },
        { taskQueue: env.taskQueue },
      );
      const result = await handle.result();
      expect(result.outcome).toBe('completed');
      expect(result.quietCheck).toMatchObject({ method: 'skipped-emergency', polls: 0 });
      expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
      const { rows } = await env.pool.query(
        `SELECT action FROM audit_log WHERE external_ref = 'leak-1' AND action IN ` +
          `('rotation.deployed', 'key.verified', 'key.revoked', 'rotation.completed') ORDER ` +
          `BY id`,
      );
      expect(rows.map((r) => r.action)).toEqual([
        'key.verified',
        'rotation.deployed',
        'key.verified',
        'key.revoked',
        'rotation.completed',
      ]);
    } finally {
      await consumer.stop();
    }
  });

  it('refuses an unknown external ref and a closing tenant without calling the platform', async () => {
    const before = env.sim.state().stats.requestsTotal;
    for (const [ref, type] of [['nobody', 'TENANT_NOT_FOUND']] as const) {
      const handle = await startRotation(env.client, { externalRef: ref }, { taskQueue: env.taskQueue });
      await expect(handle.result()).rejects.toSatisfy((e) => failureTypeOf(e) === type);
    }
    const cli = await runCli(['rotate-key', 'nobody'], env.cliEnv);
    expect(cli.code).not.toBe(0);
    expect(env.sim.state().stats.requestsTotal).toBe(before);

    await env.onboard('closing-1');
    await env.pool.query(`UPDATE tenants SET status = 'closing' WHERE external_ref = 'closing-1'`);
    const countBefore = env.sim.state().stats.requestsTotal;
    const handle = await startRotation(env.client, { externalRef: 'closing-1' }, { taskQueue: env.taskQueue });
    await expect(handle.result()).rejects.toSatisfy((e) => failureTypeOf(e) === 'TENANT_CLOSED');
    expect(env.sim.state().stats.requestsTotal).toBe(countBefore);
  });
});
