import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifecycleWorkflowId } from '../../src/domain/ids.js';
import { tenantExternalRefKey, tenantStatusKey } from '../../src/domain/search-attributes.js';
import { fastWorld, uniqueId, type FastWorld } from '../harness/fast-workflow.js';

/**
 * suspendTenant and resumeTenant with mocked activities: one platform call each, under the run's own key
 * (its first run id), the TenantStatus the tenant is left in, and a refused input that calls nothing.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

describe('suspendTenant / resumeTenant (mocked activities)', () => {
  it('suspends, then resumes, each with one call under its run key, and leaves the TenantStatus', async () => {
    const ref = uniqueId('t');
    const calls: string[] = [];
    await world.run(
      {
        suspendTenantOnPlatform: async (input) => {
          calls.push(`suspend ${input.externalRef} ${input.runKey} ${input.operator}: ${input.reason}`);
          return { subaccountId: 'sa_1', status: 'suspended' };
        },
        resumeTenantOnPlatform: async (input) => {
          calls.push(`resume ${input.externalRef} ${input.runKey} ${input.operator}: ${input.reason}`);
          return { subaccountId: 'sa_1', status: 'active' };
        },
      },
      async ({ client, taskQueue }) => {
        const suspend = await client.workflow.start('suspendTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('suspend', ref),
          args: [{ externalRef: ref, reason: 'unpaid invoice', operator: 'alice' }],
        });
        expect(await suspend.result()).toEqual({ externalRef: ref, subaccountId: 'sa_1', status: 'suspended' });
        const suspended = (await suspend.describe()).typedSearchAttributes;
        expect(suspended.get(tenantExternalRefKey)).toBe(ref);
        expect(suspended.get(tenantStatusKey)).toBe('suspended');

        const resume = await client.workflow.start('resumeTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('resume', ref),
          args: [{ externalRef: ref, reason: 'invoice paid' }],
        });
        expect(await resume.result()).toEqual({ externalRef: ref, subaccountId: 'sa_1', status: 'active' });
        expect((await resume.describe()).typedSearchAttributes.get(tenantStatusKey)).toBe('active');
        expect(calls).toEqual([
          `suspend ${ref} ${suspend.firstExecutionRunId} alice: unpaid invoice`,
          `resume ${ref} ${resume.firstExecutionRunId} unknown: invoice paid`,
        ]);
      },
    );
  }, 30_000);

  it('refuses a suspend without a reason, or under another workflow id, before any platform call', async () => {
    const ref = uniqueId('t');
    let called = 0;
    await world.run(
      {
        suspendTenantOnPlatform: async () => {
          called += 1;
          return { subaccountId: 'sa_1', status: 'suspended' };
        },
      },
      async ({ client, taskQueue }) => {
        const noReason = await client.workflow.start('suspendTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('suspend', ref),
          args: [{ externalRef: ref, reason: '' }],
        });
        await expect(noReason.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
        const otherId = await client.workflow.start('suspendTenant', {
          taskQueue,
          workflowId: lifecycleWorkflowId('suspend', `${ref}-other`),
          args: [{ externalRef: ref, reason: 'unpaid invoice' }],
        });
        await expect(otherId.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
        expect(called).toBe(0);
      },
    );
  }, 30_000);
});
