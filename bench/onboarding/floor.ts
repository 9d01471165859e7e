import { performance } from 'node:perf_hooks';
import type { OnboardingWorld } from './world.js';
import { ONBOARDING_PURPOSE, DEFAULT_SLOT } from '../../workflows/onboard-tenant.js';

/**
 * The floor: what one onboarding costs without Temporal, one step after another.
 * - `callsOnly`: the four platform calls an onboarding makes (create sub-account, transfer,
 *   create key, one verify call with the key), through the same platform client.
 * - `activitiesDirect`: the production activity functions called in a plain loop: the same calls
 *   AND the same Postgres records, audit rows and sealing. The workflow's own overhead is the
 *   difference from this one, so the target compares against it.
 */
export function floorRunners(world: OnboardingWorld, fundingMicroUsd: string) {
  const { platform } = world.deps;
  const { activities } = world;
  const stepMs = new Map<string, number[]>();
  async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await run();
    } finally {
      stepMs.set(name, [...(stepMs.get(name) ?? []), performance.now() - started]);
    }
  }
  return {
    /** Mean milliseconds of each activity in the activities-direct runs so far. */
    meanStepMs(): Record<string, number> {
      return Object.fromEntries(
        [...stepMs.entries()].map(([name, xs]) => [
          name,
          Math.round((xs.reduce((s, x) => s + x, 0) / xs.length) * 10) / 10,
        ]),
      );
    },
    async callsOnly(externalRef: string): Promise<void> {
      const { subaccount } = await platform.createSubaccount({
        name: `Floor ${externalRef}`,
        externalRef,
        idempotencyKey: `floor-create-${externalRef}`,
      });
      await platform.transfer({
        subaccountId: subaccount.id,
        amountMicroUsd: fundingMicroUsd,
        idempotencyKey: `floor-transfer-${externalRef}`,
      });
      const created = await platform.createTenantKey({ subaccountId: subaccount.id, name: 'default-g1-a1' });
      await platform.listProjects({ auth: { kind: 'tenant-key', token: created.token } });
    },
    async activitiesDirect(externalRef: string): Promise<void> {
      const { subaccountId } = await step('ensureSubaccount', () =>
        activities.ensureSubaccount({ externalRef, name: `Floor ${externalRef}` }),
      );
      const funded = await step('fundWallet', () =>
        activities.fundWallet({
          externalRef,
          subaccountId,
          amountMicroUsd: fundingMicroUsd,
          purpose: ONBOARDING_PURPOSE,
        }),
      );
      if (funded.state !== 'succeeded') throw new Error(`floor funding of ${externalRef} ended ${funded.state}`);
      const keyRef = { externalRef, slot: DEFAULT_SLOT, generation: 1 };
      const issued = await step('issueTenantKey', () => activities.issueTenantKey({ ...keyRef, subaccountId }));
      if (issued.state !== 'issued') throw new Error(`floor key of ${externalRef} ended ${issued.state}`);
      await step('verifyTenantKey', () => activities.verifyTenantKey(keyRef));
      await step('markTenantActive', () => activities.markTenantActive({ externalRef }));
    },
  };
}
