import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelRotation, startRotation } from '../../src/client/keys/start-rotation.js';
import {
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
  rotationStatusQuery,
} from '../../workflows/keys/rotate-tenant-key-messages.js';
import { clearFaults, setFaults } from '../harness/onboarding-env.js';
import { failureTypeOf, historyJson } from '../harness/onboarding-checks.js';
import { createRotationEnv, keepUsing, keysOf, waitForStage, type RotationEnv } from '../harness/rotation-env.js';

const FAST = { quietPeriod: '1s', propagationAllowance: '0s', pollInterval: '300ms', quietDeadline: '30s' };

describe('rotation when responses are lost and deployers fail', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('rotation-recovery');
  });
  afterAll(async () => env?.close());

  for (const [label, path] of [
    ['key create', '/subaccounts/*/api-keys/create'],
    ['revoke', '/subaccounts/*/api-keys/*/revoke'],
  ] as const) {
    it(`recovers a lost ${label} response with no orphan and no double key`, async () => {
      const ref = `lost-${label.replace(/\W+/g, '-')}`;
      const { subaccountId, keyId: oldKeyId } = await env.onboard(ref);
      await setFaults(env.sim, [{ method: 'POST', path, mode: 'drop-after-commit', count: 1 }]);
      try {
        const handle = await startRotation(
          env.client,
          { externalRef: ref, options: FAST },
          { taskQueue: env.taskQueue },
        );
        const result = await handle.result();
        expect(result.outcome).toBe('completed');
      } finally {
        await clearFaults(env.sim);
      }
      const keys = keysOf(env, subaccountId);
      expect(keys.filter((k) => k.status === 'active')).toHaveLength(1);
      expect(keys.find((k) => k.id === oldKeyId)!.status).toBe('revoked');
      const generation2 = keys.filter((k) => k.name.startsWith('tpo-default-g2-'));
      // A lost create leaves one orphan, found by its name and revoked; a lost revoke leaves none.
      expect(generation2.filter((k) => k.status === 'revoked')).toHaveLength(label === 'key create' ? 1 : 0);
      const { rows } = await env.pool.query(
        `SELECT count(*)::int AS n FROM audit_log WHERE external_ref = $1::text AND action = 'key.revoked'`,
        [ref],
      );
      expect(rows).toEqual([{ n: 1 }]);
    });
  }

  it('retries the signed keyRotated notice until the endpoint answers 2xx, same bytes every time', async () => {
    await env.onboard('notify-retry');
    env.notify.failNext(2);
    const handle = await startRotation(
      env.client,
      { externalRef: 'notify-retry', emergency: true },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    const deliveries = env.notify.received.filter((n) => n.body.includes('"notify-retry"'));
    expect(deliveries.map((d) => d.status)).toEqual([503, 503, 204]);
    expect(new Set(deliveries.map((d) => d.body)).size).toBe(1);
    expect(new Set(deliveries.map((d) => d.deliveryId)).size).toBe(1);
    expect(deliveries.every((d) => d.signatureValid)).toBe(true);
  });

  it('writes the new key into the project env var by read-modify-write, keeping the other variables', async () => {
    const { subaccountId } = await env.onboard('env-1');
    const auth = { kind: 'platform', subaccountId } as const;
    const { project } = await env.platform.createProject({ auth, name: 'web', region: 'eu-central' });
    await env.platform.putEnvVars({
      auth,
      projectId: project.id,
      vars: { OTHER: 'kept', TENANT_API_KEY: await env.token('env-1') },
    });
    const handle = await startRotation(
      env.client,
      { externalRef: 'env-1', emergency: true, deployer: { kind: 'project-env' } },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    const { vars } = await env.platform.getEnvVars({ auth, projectId: project.id });
    expect(vars).toEqual({ OTHER: 'kept', TENANT_API_KEY: await env.token('env-1') });
    expect(await historyJson(env.client, handle.workflowId)).not.toMatch(/svsk_[A-Za-z0-9]/);
  });

  it('at the active-key limit lists the keys and which look unused, and never revokes one itself', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('limit-1');
    const spare = await env.platform.createTenantKey({ subaccountId, name: 'spare-unused' });
    const busy = await env.platform.createTenantKey({ subaccountId, name: 'busy-worker' });
    const consumer = keepUsing(env, busy.token.reveal(), 200);
    try {
      const handle = await startRotation(
        env.client,
        { externalRef: 'limit-1', options: { ...FAST, quietPeriod: '30s' } },
        { taskQueue: env.taskQueue },
      );
      const waiting = await waitForStage(env, handle.workflowId, 'key_limit');
      const view = Object.fromEntries(
        waiting.activeKeys!.map((k) => [k.id, { looksUnused: k.looksUnused, current: k.isCurrentKeyOfSlot }]),
      );
      expect(view).toEqual({
        [oldKeyId]: { looksUnused: false, current: true },
        [spare.key.id]: { looksUnused: true, current: false },
        [busy.key.id]: { looksUnused: false, current: false },
      });
      expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(3);

      await env.platform.revokeTenantKey({ subaccountId, keyId: spare.key.id });
      await handle.executeUpdate(retryKeyCreateUpdate, {
        args: [{ operator: 'erin', reason: 'test: a slot was freed' }],
      });
      await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
      await handle.executeUpdate(revokeAnywayUpdate, {
        args: [{ operator: 'erin', reason: 'test: skip the 30 s quiet period' }],
      });
      expect((await handle.result()).outcome).toBe('completed');
      expect(keysOf(env, subaccountId).find((k) => k.id === busy.key.id)!.status).toBe('active');
    } finally {
      await consumer.stop();
    }
  });

  it('a close cancels a running rotation cleanly: no extra active key, and later rotations are refused', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('close-1');
    const handle = await startRotation(
      env.client,
      { externalRef: 'close-1', options: { ...FAST, quietPeriod: '1h' } },
      { taskQueue: env.taskQueue },
    );
    await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
    await env.pool.query(`UPDATE tenants SET status = 'closing' WHERE external_ref = 'close-1'`);
    const final = await cancelRotation(env.client, 'close-1', 'default');
    expect(final?.stage).toBe('cancelled');
    expect(
      keysOf(env, subaccountId)
        .filter((k) => k.status === 'active')
        .map((k) => k.id),
    ).toEqual([oldKeyId]);
    const { rows } = await env.pool.query(`SELECT state FROM key_rotations WHERE external_ref = 'close-1'`);
    expect(rows).toEqual([{ state: 'cancelled' }]);
    const again = await startRotation(env.client, { externalRef: 'close-1' }, { taskQueue: env.taskQueue });
    expect(failureTypeOf(await again.result().catch((e: unknown) => e))).toBe('TENANT_CLOSED');
  });
});

describe('rotation on a platform that shows no last use', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('rotation-nolastuse', { choices: { showLastUsed: false } });
  });
  afterAll(async () => env?.close());

  it('waits the configured overlap window instead of a quiet check, and says so in the run', async () => {
    const { subaccountId, keyId: oldKeyId } = await env.onboard('blind-1');
    const handle = await startRotation(
      env.client,
      { externalRef: 'blind-1', options: { ...FAST, overlapWindow: '2s' } },
      { taskQueue: env.taskQueue },
    );
    const result = await handle.result();
    expect(result.quietCheck.method).toBe('overlap-window');
    const status = await handle.query(rotationStatusQuery);
    expect(status.notes.some((n) => /no last-use information/.test(n))).toBe(true);
    expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
    const { rows } = await env.pool.query(
      `SELECT outcome->'quietCheck'->>'method' AS method FROM key_rotations WHERE external_ref = 'blind-1'`,
    );
    expect(rows).toEqual([{ method: 'overlap-window' }]);
  });
});
