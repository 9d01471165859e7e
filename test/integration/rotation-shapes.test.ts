import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import { abortRotationUpdate, rotationStatusQuery } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { createRotationEnv, keysOf, useKey, waitFor, waitForStage, type RotationEnv } from '../harness/rotation-env.js';

/**
 * Issue 15: the quiet gate must find last use wherever the platform shows it. Against each shape a
 * consumer calls with the old key every 300 ms after deploy; the rotation holds the old key while it
 * is used and revokes it only once it has gone quiet. The overlap window is set SHORTER than the use,
 * so a gate that missed the last use (and fell back to the window) would revoke under the consumer.
 */
const TIMINGS = {
  quietPeriod: '2s',
  propagationAllowance: '5s',
  pollInterval: '300ms',
  quietDeadline: '60s',
  overlapWindow: '1s',
};

describe.each(['default', 'alt', 'snake'] as const)('rotation against the %s platform shape', (shape) => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv(`rotation-${shape}`, { choices: SIM_SHAPES[shape] });
  });
  afterAll(async () => env?.close());

  it('holds the old key while it is used every 300 ms and revokes it after it goes quiet', async () => {
    const ref = `use-${shape}`;
    const { subaccountId, keyId: oldKeyId } = await env.onboard(ref);
    const oldToken = await env.token(ref);
    const handle = await startRotation(
      env.client,
      { externalRef: ref, options: TIMINGS },
      { taskQueue: env.taskQueue },
    );
    await waitForStage(env, handle.workflowId, 'waiting_for_quiet');

    // The consumer: every 300 ms for 3 s after deploy (longer than the overlap window), all answered.
    const answers: number[] = [];
    for (let i = 0; i < 10; i += 1) {
      answers.push(await useKey(env, oldToken));
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(answers.every((s) => s === 200)).toBe(true);
    expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('active');
    const lastUse = keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.lastUsedAt!;

    const result = await handle.result();
    expect(result).toMatchObject({ outcome: 'completed', revokedKeyId: oldKeyId });
    expect(result.quietCheck.method).toBe('last-use');
    const old = keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!;
    expect(old.status).toBe('revoked');
    expect(old.lastUsedAt).toBe(lastUse);
    // On the platform's own clock: revoked only after a full quiet period since the consumer's last call.
    expect(Date.parse(old.revokedAt!) - Date.parse(lastUse)).toBeGreaterThanOrEqual(2_000);
    expect(await useKey(env, await env.token(ref))).toBe(200);
  });
});

describe('the revoke re-reads the key record and refuses a use since the gate passed', () => {
  let env: RotationEnv;
  const probe = { token: undefined as string | undefined, revokeCalls: 0 };
  beforeAll(async () => {
    // A consumer call lands between the gate's last look and the revoke (the worst moment).
    env = await createRotationEnv('rotation-recheck', { choices: SIM_SHAPES.alt }, {}, (activities) => ({
      ...activities,
      revokeKeyGeneration: async (input) => {
        probe.revokeCalls += 1;
        if (probe.revokeCalls === 1 && probe.token) await useKey(env, probe.token);
        return activities.revokeKeyGeneration(input);
      },
    }));
  });
  afterAll(async () => env?.close());

  it('revokes nothing when last use moves between the gate and the revoke, and goes back to the gate', async () => {
    const ref = 'recheck-1';
    const { subaccountId, keyId: oldKeyId } = await env.onboard(ref);
    probe.token = await env.token(ref);
    const options = { quietPeriod: '1s', propagationAllowance: '1s', pollInterval: '300ms', quietDeadline: '60s' };
    const handle = await startRotation(env.client, { externalRef: ref, options }, { taskQueue: env.taskQueue });

    // Back at the gate, the late use holds the run for an operator; the old key was never revoked.
    const held = await waitForStage(env, handle.workflowId, 'held');
    expect(probe.revokeCalls).toBe(1);
    expect(held.heldReason).toBe('used_after_allowance');
    expect(held.notes.some((n) => /revoke refused/.test(n))).toBe(true);
    const old = keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!;
    expect([old.status, old.revokedAt]).toEqual(['active', null]);
    expect(await useKey(env, probe.token)).toBe(200);
    const { rows } = await env.pool.query(
      `SELECT count(*)::int AS n FROM audit_log WHERE external_ref = $1::text AND action = 'key.revoked'`,
      [ref],
    );
    expect(rows[0].n).toBe(0);

    await handle.executeUpdate(abortRotationUpdate, {
      args: [{ operator: 'erin', reason: 'consumer still on the old key' }],
    });
    expect((await handle.result()).outcome).toBe('aborted');
    expect(
      keysOf(env, subaccountId)
        .filter((k) => k.status === 'active')
        .map((k) => k.id),
    ).toEqual([oldKeyId]);
  });

  it('revokes once nothing moves: the re-read agrees with the gate', async () => {
    const ref = 'recheck-2';
    const { subaccountId, keyId: oldKeyId } = await env.onboard(ref);
    probe.token = undefined;
    const calls = probe.revokeCalls;
    const options = { quietPeriod: '1s', propagationAllowance: '1s', pollInterval: '300ms', quietDeadline: '60s' };
    const handle = await startRotation(env.client, { externalRef: ref, options }, { taskQueue: env.taskQueue });
    expect((await handle.result()).outcome).toBe('completed');
    expect(probe.revokeCalls).toBe(calls + 1);
    expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
    const status = await waitFor(async () => handle.query(rotationStatusQuery), 'status');
    expect(status.notes.some((n) => /revoke refused/.test(n))).toBe(false);
  });
});
