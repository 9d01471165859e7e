import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { rotationStatusQuery } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { runCli } from '../harness/cli.js';
import { processed, refusal } from '../harness/decisions.js';
import { createRotationEnv, keepUsing, keysOf, waitForStage, type RotationEnv } from '../harness/rotation-env.js';

/**
 * The decisions on a held rotation, sent as operators send them: a bad value or a decision the run
 * does not wait for is refused with the field and the rule, nothing reaches history, and the old
 * key (still in use) stays active until a valid decision comes.
 */
describe('operator decisions on a held rotation', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('rotation-decisions');
  });
  afterAll(async () => env?.close());

  it(
    'refuses a bad revokeAnyway, abortRotation or retryKeyCreate before history and ' +
      'keeps the old key until a valid one',
    async () => {
      const { subaccountId, keyId: oldKeyId } = await env.onboard('decide-held');
      const consumer = keepUsing(env, await env.token('decide-held'), 150);
      try {
        const options = { quietPeriod: '2s', propagationAllowance: '1m', pollInterval: '300ms', quietDeadline: '2s' };
        const handle = await startRotation(
          env.client,
          { externalRef: 'decide-held', options },
          { taskQueue: env.taskQueue },
        );
        await waitForStage(env, handle.workflowId, 'held');
        const eventsBefore = (await handle.fetchHistory()).events!.length;

        const ok = { operator: 'dave', reason: 'consumer confirmed migrated' };
        for (const [name, bad, field] of [
          ['revokeAnyway', { ...ok, reason: '' }, 'reason'],
          ['revokeAnyway', { ...ok, reason: 'x'.repeat(1001) }, 'reason'],
          ['revokeAnyway', { reason: ok.reason }, 'operator'],
          ['abortRotation', { ...ok, operator: '' }, 'operator'],
          ['abortRotation', { ...ok, force: true }, 'force'],
          ['escalateToEmergency', { ...ok, operator: 'dave smith' }, 'operator'],
        ] as const) {
          const refused = await refusal(handle, name, bad);
          expect(refused.type, `${name} ${JSON.stringify(bad)}`).toBe('INVALID_DECISION');
          expect(refused.problems.map((p) => p.split(':')[0])).toContain(field);
        }
        const notAtLimit = await refusal(handle, 'retryKeyCreate', ok);
        expect(notAtLimit.type).toBe('DECISION_NOT_APPLICABLE');
        expect(notAtLimit.message).toMatch(/retryKeyCreate applies at key_limit/);

        // Through the gateway: the run's validator refuses, the answer names the field (400, exit 2).
        const cli = await runCli(['rotation', 'revoke-anyway', 'decide-held', '--reason', ' '], env.cliEnv);
        expect(cli.code).toBe(2);
        expect(cli.stderr).toMatch(/^error: reason: /);
        expect((await handle.fetchHistory()).events!.length).toBe(eventsBefore);

        // A signal of the decision's name (the pre-1.0 signals are gone): no handler takes it, nothing is revoked.
        await handle.signal('revokeAnyway', { operator: '', reason: '' });
        await processed(handle);
        expect((await handle.query(rotationStatusQuery)).stage).toBe('held');
        expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('active');

        const valid = await runCli(['rotation', 'revoke-anyway', 'decide-held', '--reason', ok.reason], env.cliEnv);
        expect(valid.code, valid.stderr).toBe(0);
        expect(valid.stdout).toMatch(/revokeAnyway accepted by rotate:decide-held:default/);
        expect((await handle.result()).outcome).toBe('completed');
        expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
        const { rows } = await env.pool.query(
          `SELECT actor FROM audit_log WHERE external_ref = 'decide-held' AND action = 'rotation.completed'`,
        );
        // Who decided is the token's name (the harness admin), never a flag.
        expect(rows).toEqual([{ actor: 'operator:ops' }]);

        const late = await runCli(['rotation', 'abort', 'decide-held', '--reason', 'changed my mind'], env.cliEnv);
        expect(late.code).not.toBe(0);
        expect(late.stderr).toMatch(/no running workflow rotate:decide-held:default/);
      } finally {
        await consumer.stop();
      }
    },
  );

  it(
    'rotate-key --emergency escalates a running rotation by Update: the old key is ' +
      'revoked without waiting for quiet',
    async () => {
      const { subaccountId, keyId: oldKeyId } = await env.onboard('decide-escalate');
      const options = { quietPeriod: '1h', propagationAllowance: '1s', pollInterval: '300ms', quietDeadline: '2h' };
      const handle = await startRotation(
        env.client,
        { externalRef: 'decide-escalate', options },
        { taskQueue: env.taskQueue },
      );
      await waitForStage(env, handle.workflowId, 'waiting_for_quiet');
      const cli = await runCli(
        ['rotate-key', 'decide-escalate', '--emergency', '--reason', 'token in a public repo'],
        env.cliEnv,
      );
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toMatch(/escalated the running rotation to emergency/);
      const result = await handle.result();
      expect(result).toMatchObject({ outcome: 'completed', quietCheck: { method: 'skipped-emergency' } });
      expect(keysOf(env, subaccountId).find((k) => k.id === oldKeyId)!.status).toBe('revoked');
      expect((await handle.query(rotationStatusQuery)).notes).toContain(
        'escalated to emergency by ops: token in a public repo',
      );
    },
  );
});
