import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInputValidationActivities } from '../../activities/input-validation.js';
import { createBeginOnboardingActivity } from '../../activities/onboarding-begin.js';
import { eventDispatcherWorkflowId, eventStreamWorkflowId, lifecycleWorkflowId } from '../../src/domain/ids.js';
import { fastWorld, uniqueId, type FastWorld } from '../harness/fast-workflow.js';
import { refusalOf } from '../harness/refused-run.js';

/**
 * Inputs a workflow once read in its own code, where a bad one threw a plain Error (or a TypeError) and failed the
 * workflow task for ever, the run left open for every later start with its id to join (issue 45's audit of
 * workflows/index.ts). Each now fails the run at once with INVALID_INPUT naming the field, or, for a close's `0`,
 * is what the input says: a close at once.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const DURATION_RULE = 'must be a duration like 500ms, 30s, 5m, 2h, 1d or whole milliseconds, longer than zero';

describe.concurrent('workflow inputs checked before they are used (mocked activities)', () => {
  it('deliverEventStream refuses a malformed or endless timing at once, naming it', async () => {
    await world.run({ nextStreamDelivery: async () => null }, async ({ client, taskQueue }) => {
      const stream = uniqueId('t');
      const handle = await client.workflow.start('deliverEventStream', {
        taskQueue,
        workflowId: eventStreamWorkflowId('esub_door', stream),
        args: [
          { subscriptionId: 'esub_door', stream, policy: { retryFor: 'a day', idleFor: '99999999999999999999d' } },
        ],
      });
      expect(await refusalOf(handle)).toMatchObject({
        type: 'INVALID_INPUT',
        problems: [
          `policy.retryFor: ${DURATION_RULE}`,
          expect.stringMatching(/^policy\.idleFor: must be at most 36500d/),
        ],
      });
    });
  });

  it('dispatchEvents refuses a batch that is no number and a stream policy with a bad timing', async () => {
    await world.run({ dispatchOutbox: async () => ({ events: 0 }) }, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('dispatchEvents', {
        taskQueue,
        workflowId: eventDispatcherWorkflowId(uniqueId(taskQueue)),
        args: [{ batch: 'many', policy: { idleFor: 'soon' } }],
      });
      expect(await refusalOf(handle)).toMatchObject({
        type: 'INVALID_INPUT',
        problems: ['batch: must be a whole number from 1 to 10000', `policy.idleFor: ${DURATION_RULE}`],
      });
    });
  });

  it('onboardTenant started with no object at all fails INVALID_INPUT, not a TypeError in its task', async () => {
    // The real first step: its input check refuses before the sub-account step is reached.
    const { beginOnboarding } = createBeginOnboardingActivity(createInputValidationActivities(), {
      ensureSubaccountStep: async () => {
        throw new Error('not reached: the input is refused first');
      },
    });
    await world.run({ beginOnboarding }, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('onboardTenant', {
        taskQueue,
        workflowId: `onboard:${uniqueId('t')}`,
        args: [null],
      });
      expect(await refusalOf(handle)).toMatchObject({
        type: 'INVALID_INPUT',
        problems: ['input: must be a JSON object'],
      });
    });
  });

  it('closeTenant with after "0" (no duration) closes at once where the server allows it, its task never failing', async () => {
    const ref = uniqueId('t');
    await world.run(
      { beginClose: async () => ({ subaccountId: 'sa_1', alreadyClosed: true, wasSuspended: false }) },
      async ({ client, taskQueue }) => {
        const handle = await client.workflow.start('closeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('close', ref),
          args: [{ externalRef: ref, reason: 'customer left', after: '0' }],
        });
        const outcome = await Promise.race([
          handle.result(),
          new Promise((resolve) => setTimeout(() => resolve('stuck'), 20_000)),
        ]);
        expect(outcome).toMatchObject({ externalRef: ref, status: 'closed', alreadyClosed: true });
      },
    );
  });
});
