import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { expect } from 'vitest';
import type { SimStateSnapshot } from '../../src/sim/index.js';

/**
 * The exactly-once invariant, checked against the simulator's own state: one live sub-account for
 * the external ref, one transfer of the amount (or none), exactly one active key.
 */
export function expectExactlyOnce(
  state: SimStateSnapshot,
  externalRef: string,
  expected: { amountMicroUsd: string | null },
) {
  const subaccounts = state.subaccounts.filter((s) => s.externalRef === externalRef);
  expect(subaccounts, `sub-accounts for ${externalRef}`).toHaveLength(1);
  const subaccount = subaccounts[0]!;
  const transfers = state.transfers.filter((t) => t.subaccountId === subaccount.id);
  if (expected.amountMicroUsd === null) expect(transfers).toHaveLength(0);
  else expect(transfers.map((t) => t.amountMicroUsd)).toEqual([expected.amountMicroUsd]);
  const keys = state.apiKeys.filter((k) => k.subaccountId === subaccount.id);
  expect(
    keys.filter((k) => k.status === 'active'),
    `active keys for ${externalRef}`,
  ).toHaveLength(1);
  return { subaccount, transfers, keys };
}

/** The full history of a workflow as JSON text, to search for secrets. */
export async function historyJson(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return JSON.stringify(history, (_key, value: unknown) =>
    value instanceof Uint8Array
      ? Buffer.from(value).toString('utf8')
      : typeof value === 'bigint'
        ? value.toString()
        : value,
  );
}

/** The ApplicationFailure type at the root of a workflow failure (tests assert types, not messages). */
export function failureTypeOf(error: unknown): string | undefined {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  while (cause) {
    if (cause instanceof ApplicationFailure) return cause.type ?? undefined;
    cause = cause instanceof ActivityFailure || cause instanceof Error ? (cause as Error).cause : undefined;
  }
  return undefined;
}

/** Whether any run under this workflow id exists (to prove a refused request started nothing). */
export function workflowExists(client: Client, workflowId: string): Promise<boolean> {
  return client.workflow
    .getHandle(workflowId)
    .describe()
    .then(
      () => true,
      (error: unknown) => (error instanceof WorkflowNotFoundError ? false : Promise.reject(error)),
    );
}
