import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { TestContext } from './context.js';
import { topUpStatusQuery, type TopUpStage, type TopUpStatus } from '../../workflows/fund-tenant-messages.js';
import type { RunningSimulator } from '../../src/sim/index.js';

/** Onboards tenants (no funding unless given) and waits until each is active. */
export async function onboardTenants(
  env: Pick<TestContext, 'client' | 'taskQueue'>,
  refs: readonly string[],
  fundingMicroUsd?: string,
): Promise<void> {
  const handles = await Promise.all(
    refs.map((externalRef) =>
      startOnboarding(
        env.client,
        { externalRef, name: `Tenant ${externalRef}`, ...(fundingMicroUsd ? { fundingMicroUsd } : {}) },
        { taskQueue: env.taskQueue },
      ),
    ),
  );
  await Promise.all(handles.map((h) => h.result()));
}

/** Waits until a top-up's query shows `stage`, and returns that status. */
export async function waitForTopUpStage(
  env: Pick<TestContext, 'client'>,
  workflowId: string,
  stage: TopUpStage,
  timeoutMs = 30_000,
): Promise<TopUpStatus> {
  const handle = env.client.workflow.getHandle(workflowId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await handle.query(topUpStatusQuery).catch(() => undefined);
    if (status?.stage === stage) return status;
    if (Date.now() > deadline) throw new Error(`${workflowId} never reached ${stage} (last: ${status?.stage})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The simulator's transfers into the sub-account of `externalRef`, as amounts (its books, not ours). */
export function platformTransfersOf(
  sim: RunningSimulator,
  externalRef: string,
): Array<{ amountMicroUsd: string; idempotencyKey: string }> {
  const state = sim.state();
  const subaccount = state.subaccounts.find((s) => s.externalRef === externalRef);
  if (!subaccount) return [];
  return state.transfers
    .filter((t) => t.subaccountId === subaccount.id)
    .map((t) => ({ amountMicroUsd: t.amountMicroUsd, idempotencyKey: t.idempotencyKey }));
}
