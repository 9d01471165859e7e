import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { FailureCode } from '../../src/domain/failures.js';
import { keyIssueWorkflowId, onboardingWorkflowId } from '../../src/domain/ids.js';
import { onboardingStatusQuery } from '../../workflows/onboard-tenant-messages.js';
import { fastWorld, uniqueId, untilValue as until, type FastWorld } from '../harness/fast-workflow.js';

/**
 * Issue 44 in the workflows, with mocked activities: the key step's own failures are typed and each has its
 * handling. An attempt that lost to a sibling (KEY_ATTEMPT_SUPERSEDED) is retried by the step's policy and the run
 * goes on; new keys the platform keeps refusing at their first use (KEY_REJECTED, final once the step's bound is
 * spent) make a funded onboarding wait visibly and try again, never fail; a slot's issue proves its key in the
 * same step, so a refused key is replaced there too. (The overlap itself, two attempts of one step at once, is
 * run against real Postgres and the simulator in test/integration/overlapping-attempts.test.ts.)
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const issued = { state: 'issued' as const, keyId: 'key_1', fingerprint: 'fp_1', orphansRevoked: [], verified: true };
const rejected = () =>
  ApplicationFailure.create({
    type: FailureCode.KEY_REJECTED,
    message: 'key key_x was refused (401) at its first use and revoked (3 of at most 3 new keys refused)',
    nonRetryable: true,
  });

function onboardingMocks(keyAnswers: Array<() => unknown>) {
  const calls = { key: 0, active: 0, stopped: 0 };
  const validation = createInputValidationActivities();
  return {
    calls,
    activities: {
      beginOnboarding: async (request: { input: unknown; workflowType: string }) => ({
        input: await validation.validateWorkflowInput({
          schema: 'onboardTenant',
          input: request.input,
          workflowType: request.workflowType,
        }),
        step: { subaccountId: 'sa_1', source: 'created' as const, requestId: null },
      }),
      issueAndVerifyTenantKey: async () => {
        const answer = keyAnswers[Math.min(calls.key, keyAnswers.length - 1)]!;
        calls.key += 1;
        return answer();
      },
      fundWallet: async () => ({ state: 'succeeded' as const, transferId: 'tr_1', resolution: null }),
      markTenantActive: async () => {
        calls.active += 1;
      },
      markOnboardingStopped: async () => {
        calls.stopped += 1;
      },
    },
  };
}

describe.concurrent('the key step when attempts overlap or keys are refused (mocked activities)', () => {
  it('an onboarding whose new keys are refused waits visibly (needs_operator) and tries again, then goes active', async () => {
    const ref = uniqueId('t');
    let release = false;
    const { calls, activities } = onboardingMocks([
      () => {
        throw rejected();
      },
      () => {
        if (!release) throw rejected();
        return issued;
      },
    ]);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('onboardTenant', {
        taskQueue,
        workflowId: onboardingWorkflowId(ref),
        args: [
          {
            externalRef: ref,
            name: 'Tenant',
            fundingMicroUsd: '1000000',
            options: { balanceRetryInterval: '300ms', pollCeiling: '300ms' },
          },
        ],
      });
      const waiting = await until(
        () => handle.query(onboardingStatusQuery),
        (s) => s.stage === 'needs_operator',
      );
      expect(waiting.key.state).toBe('rejected');
      expect(waiting.waitingFor).toMatch(/refused every new key .* at its first use \(401\)/);
      expect(waiting.waitingFor).toContain(`tenantctl status ${ref}`);
      // The run is waiting, not failed: it keeps trying, one key per wait.
      await until(
        async () => calls.key,
        (n) => n >= 3,
      );
      expect((await handle.describe()).status.name).toBe('RUNNING');
      release = true;
      const result = await handle.result();
      expect(result).toMatchObject({ status: 'active', keyId: 'key_1' });
      expect(calls.active).toBe(1);
      expect(calls.stopped).toBe(0);
    });
  });

  it('an attempt superseded by a sibling is retried by the step and the onboarding completes', async () => {
    const ref = uniqueId('t');
    const { calls, activities } = onboardingMocks([
      () => {
        throw ApplicationFailure.create({
          type: FailureCode.KEY_ATTEMPT_SUPERSEDED,
          message: 'a newer attempt is running',
          nonRetryable: false,
        });
      },
      () => issued,
    ]);
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('onboardTenant', {
        taskQueue,
        workflowId: onboardingWorkflowId(ref),
        args: [{ externalRef: ref, name: 'Tenant', fundingMicroUsd: '1000000' }],
      });
      expect(result).toMatchObject({ status: 'active', keyId: 'key_1' });
      expect(calls.key).toBe(2);
    });
  });

  it("a slot's issue proves its key in the same step: a refused key is replaced by the step's retry", async () => {
    const ref = uniqueId('t');
    let tries = 0;
    const activities = {
      beginSlotKeyIssue: async () => ({ state: 'issue' as const, subaccountId: 'sa_1', generation: 1 }),
      issueAndVerifyTenantKey: async () => {
        tries += 1;
        if (tries === 1)
          throw ApplicationFailure.create({
            type: FailureCode.KEY_REJECTED,
            message: 'refused (1 of at most 3): the next attempt issues another',
            nonRetryable: false,
          });
        return issued;
      },
    };
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('issueTenantKey', {
        taskQueue,
        workflowId: keyIssueWorkflowId(ref, 'ci'),
        args: [{ externalRef: ref, slot: 'ci' }],
      });
      expect(result).toMatchObject({ outcome: 'issued', keyId: 'key_1' });
      expect(tries).toBe(2);
    });
  });
});
