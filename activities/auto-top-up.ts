import { withTransaction } from '../src/db/pool.js';
import { observeBalance } from '../src/db/wallet-alerts-store.js';
import { getFundingParent, listPolicyTenantsPage } from '../src/db/funding-store.js';
import type { ActivityDeps } from './context.js';
import { boundary } from './failures.js';

/** The auto top-up sweep's reads: a page of policy tenants (Postgres), and one wallet (the platform). */
export interface AutoTopUpPage {
  tenants: Array<{ externalRef: string; subaccountId: string; below: string; to: string }>;
  /** Set while the platform says the parent's own balance is insufficient: the sweep starts nothing. */
  parentInsufficientSince: string | null;
}

export function createAutoTopUpActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  return {
    listAutoTopUpPage: boundary(async (input: { after: string | null; limit: number }): Promise<AutoTopUpPage> => {
      const parent = await getFundingParent(pool);
      const rows = await listPolicyTenantsPage(pool, input);
      return {
        tenants: rows.map((r) => ({
          externalRef: r.externalRef,
          subaccountId: r.subaccountId,
          below: r.belowMicroUsd,
          to: r.toMicroUsd,
        })),
        parentInsufficientSince: parent.insufficientSince?.toISOString() ?? null,
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
