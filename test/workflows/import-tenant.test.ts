import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import type { ImportedSubaccount, ImportedWallet } from '../../activities/import.js';
import { importWorkflowId } from '../../src/domain/ids.js';
import type { ImportTenantInput } from '../../src/domain/import-input.js';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../../src/domain/search-attributes.js';
import { fastWorld, uniqueId, type ActivityMocks, type FastWorld } from '../harness/fast-workflow.js';

/**
 * importTenant with mocked activities: the sub-account and its wallet read on the platform, then recorded with
 * what was read (requestedBy defaulting to `import`); the recorded outcome (imported, already_imported) and the
 * platform status answered and left on the TenantStatus; a refused read fails the run with nothing recorded; a
 * refused input or another workflow id calls nothing.
 */
let world: FastWorld;
beforeAll(async () => {
  world = await fastWorld();
});
afterAll(() => world.close());

const SUBACCOUNT: ImportedSubaccount = {
  status: 'suspended',
  keys: [{ id: 'key_1', name: 'ci', createdAt: '2025-01-01T00:00:00.000Z' }],
};
const WALLET: ImportedWallet = { balanceMicroUsd: '1500000', transferKeys: ['k1'], transferIds: ['tr_1'] };

function mocks(recorded: 'imported' | 'already_imported', readRefused = false) {
  const calls: string[] = [];
  const recordedInputs: unknown[] = [];
  const activities: ActivityMocks = {
    readSubaccountForImport: async (input) => {
      calls.push(`subaccount ${input.subaccountId} ${input.externalRef} ${input.refSource}`);
      if (readRefused) throw ApplicationFailure.nonRetryable('the sub-account carries another ref', 'IMPORT_CONFLICT');
      return SUBACCOUNT;
    },
    readWalletForImport: async (input) => {
      calls.push(`wallet ${input.subaccountId}`);
      return WALLET;
    },
    recordImportedTenant: async (input) => {
      calls.push('record');
      recordedInputs.push(input);
      return { outcome: recorded, unmanagedKeys: ['key_1'], openingBalanceMicroUsd: '1500000' } as never;
    },
  };
  return { calls, recordedInputs, activities };
}

describe('importTenant (mocked activities)', () => {
  it('reads the sub-account and wallet, records what it read, and answers imported with the platform status', async () => {
    const ref = uniqueId('imp');
    const { calls, recordedInputs, activities } = mocks('imported');
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('importTenant', {
        taskQueue,
        workflowId: importWorkflowId(ref),
        args: [{ externalRef: ref, subaccountId: 'sa_9', name: 'Acme', refSource: 'map' } satisfies ImportTenantInput],
      });
      expect(await handle.result()).toEqual({
        externalRef: ref,
        subaccountId: 'sa_9',
        outcome: 'imported',
        status: 'suspended',
        unmanagedKeys: ['key_1'],
        openingBalanceMicroUsd: '1500000',
      });
      const attributes = (await handle.describe()).typedSearchAttributes;
      expect(attributes.get(tenantExternalRefKey)).toBe(ref);
      expect(attributes.get(tenantSubaccountIdKey)).toBe('sa_9');
      expect(attributes.get(tenantStatusKey)).toBe('suspended');
    });
    expect(calls).toEqual([`subaccount sa_9 ${ref} map`, 'wallet sa_9', 'record']);
    expect(recordedInputs).toEqual([
      {
        externalRef: ref,
        name: 'Acme',
        subaccountId: 'sa_9',
        refSource: 'map',
        requestedBy: 'import',
        subaccount: SUBACCOUNT,
        wallet: WALLET,
      },
    ]);
  }, 30_000);

  it('answers already_imported as recorded, under the requester given', async () => {
    const ref = uniqueId('imp');
    const { recordedInputs, activities } = mocks('already_imported');
    await world.run(activities, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('importTenant', {
        taskQueue,
        workflowId: importWorkflowId(ref),
        args: [
          {
            externalRef: ref,
            subaccountId: 'sa_9',
            name: 'Acme',
            refSource: 'platform',
            requestedBy: 'alice',
          } satisfies ImportTenantInput,
        ],
      });
      expect(result).toMatchObject({ outcome: 'already_imported', status: 'suspended' });
    });
    expect(recordedInputs).toMatchObject([{ refSource: 'platform', requestedBy: 'alice' }]);
  }, 30_000);

  it('fails with the refusal of a platform read, recording nothing', async () => {
    const ref = uniqueId('imp');
    const { calls, activities } = mocks('imported', true);
    await world.run(activities, async ({ client, taskQueue }) => {
      const handle = await client.workflow.start('importTenant', {
        taskQueue,
        workflowId: importWorkflowId(ref),
        args: [{ externalRef: ref, subaccountId: 'sa_9', name: 'Acme', refSource: 'platform' }],
      });
      await expect(handle.result()).rejects.toMatchObject({ cause: { cause: { type: 'IMPORT_CONFLICT' } } });
    });
    expect(calls).toEqual([`subaccount sa_9 ${ref} platform`]);
  }, 30_000);

  it('refuses an input without a ref source, or under another workflow id, before any call', async () => {
    const ref = uniqueId('imp');
    const { calls, activities } = mocks('imported');
    await world.run(activities, async ({ client, taskQueue }) => {
      const noSource = await client.workflow.start('importTenant', {
        taskQueue,
        workflowId: importWorkflowId(ref),
        args: [{ externalRef: ref, subaccountId: 'sa_9', name: 'Acme' }],
      });
      await expect(noSource.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
      const otherId = await client.workflow.start('importTenant', {
        taskQueue,
        workflowId: importWorkflowId(`${ref}-other`),
        args: [{ externalRef: ref, subaccountId: 'sa_9', name: 'Acme', refSource: 'map' }],
      });
      await expect(otherId.result()).rejects.toMatchObject({ cause: { type: 'INVALID_INPUT' } });
    });
    expect(calls).toEqual([]);
  }, 30_000);
});
