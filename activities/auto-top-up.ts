import { withTransaction } from '../src/db/pool.js';
import { observeBalance } from '../src/db/wallet-alerts-store.js';
import { getFundingParent, listPolicyTenantsPage } from '../src/db/funding-store.js';
import { DEFAULT_TRANSFER_MAX_MICRO_USD } from '../src/domain/transfer-limit.js';
import type { ActivityDeps } from './context.js';
import { boundary } from './failures.js';

/** The auto top-up sweep's reads: a page of policy tenants (Postgres), and one wallet (the platform). */
export interface AutoTopUpPage {
  tenants: Array<{ externalRef: string; subaccountId: string; below: string; to: string }>;
  /** Set while the parent's balance is recorded short for every amount: the sweep starts nothing. */
  parentInsufficientSince: string | null;
  /**
   * Set while the platform's last INSUFFICIENT_BALANCE was for this amount (src/domain/parent-shortfall.ts):
   * the sweep starts no top-up of it or more, and smaller ones as usual. Absent in older histories.
   */
  parentRefusedMicroUsd?: string | null;
}

export function createAutoTopUpActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  return {
    listAutoTopUpPage: boundary(async (input: { after: string | null; limit: number }): Promise<AutoTopUpPage> => {
      const parent = await getFundingParent(pool);
      const rows = await listPolicyTenantsPage(pool, input);
      const amountKnown = parent.insufficientSince !== null && parent.insufficientMicroUsd !== null;
      return {
        tenants: rows.map((r) => ({
          externalRef: r.externalRef,
          subaccountId: r.subaccountId,
          ...withinTransferLimit(r, deps.transfers?.maxMicroUsd ?? DEFAULT_TRANSFER_MAX_MICRO_USD),
        })),
        parentInsufficientSince: amountKnown ? null : (parent.insufficientSince?.toISOString() ?? null),
        parentRefusedMicroUsd: amountKnown ? parent.insufficientMicroUsd : null,
      };
    }),

    /**
     * One wallet read, on the rate-limited platform queue. `readAt` is the database's clock just
     * before the read: the top-up it leads to is refused when any transfer of the tenant moved after
     * it (the balance is stale), so two sweeps reading the same low balance top it up once.
     */
    readWalletForAutoTopUp: boundary(
      async (input: {
        externalRef: string;
        subaccountId: string;
      }): Promise<{ balanceMicroUsd: string | null; readAt: string }> => {
        const { rows } = await pool.query<{ now: Date }>('SELECT now() AS now');
        const { wallet } = await platform.getWallet({ subaccountId: input.subaccountId });
        if (wallet.balanceKnown && wallet.balanceMicroUsd)
          await withTransaction(pool, (tx) =>
            observeBalance(tx, {
              externalRef: input.externalRef,
              subaccountId: input.subaccountId,
              balanceMicroUsd: wallet.balanceMicroUsd!,
              ...(deps.events?.lowBalanceMicroUsd ? { defaultThresholdMicroUsd: deps.events.lowBalanceMicroUsd } : {}),
            }),
          );
        return {
          balanceMicroUsd: wallet.balanceKnown ? (wallet.balanceMicroUsd ?? null) : null,
          readAt: rows[0]!.now.toISOString(),
        };
      },
    ),
  };
}

/**
 * A policy set before TRANSFER_MAX_MICRO_USD was lowered could ask for one top-up above it: the sweep
 * tops up to the limit instead (`below` held at or under it, so the amount stays positive), and
 * the fundTenant it starts passes its input check. New policies above the limit are refused.
 */
function withinTransferLimit(
  policy: { belowMicroUsd: string; toMicroUsd: string },
  maxMicroUsd: string,
): { below: string; to: string } {
  const max = BigInt(maxMicroUsd);
  const min = (a: string) => (BigInt(a) > max ? maxMicroUsd : a);
  return { below: min(policy.belowMicroUsd), to: min(policy.toMicroUsd) };
}
