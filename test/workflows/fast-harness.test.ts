import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifecycleWorkflowId } from '../../src/domain/ids.js';
import { fastWorld, uniqueId, until, type FastWorld } from '../harness/fast-workflow.js';

/**
 * The fast workflow harness itself (test/harness/fast-workflow.ts): a test that fails while a mocked
 * activity is still blocked reports its own failure in seconds, instead of its worker waiting for that
 * activity for ever and the test ending at its timeout with no cause.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

describe('fastWorld().run', () => {
  it("rejects with the body's own failure while a mocked activity never returns", async () => {
    const ref = uniqueId('t');
    let called = false;
    const began = Date.now();
    const run = world.run(
      {
        suspendTenantOnPlatform: () => {
          called = true;
          return new Promise(() => undefined);
        },
      },
      async ({ client, taskQueue }) => {
        await client.workflow.start('suspendTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('suspend', ref),
          args: [{ externalRef: ref, reason: 'unpaid invoice', operator: 'alice' }],
        });
        await until(() => called);
        throw new Error('the assertion that failed');
      },
    );
    const failure: unknown = await run.then(
      () => new Error('run resolved'),
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ message: 'the assertion that failed' });
    expect(Date.now() - began).toBeLessThan(20_000);
    await world.client.workflow.getHandle(lifecycleWorkflowId('suspend', ref)).terminate('test over');
  }, 40_000);
});
