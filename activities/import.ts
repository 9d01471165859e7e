import { createHash } from 'node:crypto';
import { recordImport } from '../src/db/imports-store.js';
import { FailureCode } from '../src/domain/failures.js';
import { isInitialFundingKey, subaccountCreateKey } from './idempotency-keys.js';
import { OUR_TRANSFER_KEY } from '../src/domain/drift-kinds.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';

/**
 * importTenant's steps: two platform reads (on the rate-limited platform queue, at most two requests
 * each like rotation's) and one database write (a local activity; one transaction, see imports-store).
 * The reads check again what the plan saw, so an input typed by hand cannot import the wrong sub-account.
 */
export interface ImportedSubaccount {
  status: 'active' | 'suspended';
  keys: Array<{ id: string; name: string | null; createdAt: string | null }>;
}
export interface ImportedWallet {
  balanceMicroUsd: string | null;
  transferKeys: string[];
  transferIds: string[];
  /**
   * Transfers under our own keys (`tpo-xfer-…`): made by us and lost by our records (a restore from a backup).
   * Recorded as made, each under its key, never in the opening balance. Absent in runs recorded before it existed.
   */
  ours?: Array<{ id: string | null; idempotencyKey: string; amountMicroUsd: string }>;
}

export function openingTransferKey(externalRef: string): string {
  return `tpo-open-${createHash('sha256')
    .update(JSON.stringify(['opening', externalRef]))
    .digest('hex')
    .slice(0, 32)}`;
}

export function createImportActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  return {
    readSubaccountForImport: boundary(
      async (input: {
        subaccountId: string;
        externalRef: string;
        refSource: 'platform' | 'map';
      }): Promise<ImportedSubaccount> => {
        const { subaccount } = await platform.getSubaccount({ subaccountId: input.subaccountId });
        const carried = subaccount.externalRef;
        if (input.refSource === 'platform' ? carried !== input.externalRef : carried !== undefined)
          throw activityFailure(
            FailureCode.EXTERNAL_REF_CONFLICT,
            `sub-account ${input.subaccountId} carries externalRef ${carried ?? '(none)'}, ` +
              `not what the import was given (${input.refSource === 'platform' ? input.externalRef : 'none, mapped'})`,
          );
        if (subaccount.status !== 'operating' && subaccount.status !== 'suspended')
          throw activityFailure(
            FailureCode.TENANT_NOT_ACTIVE,
            `sub-account ${input.subaccountId} is ` +
              `${subaccount.rawStatus ?? subaccount.status}: only operating or suspended ones ` +
              `are imported`,
          );
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        return {
          status: subaccount.status === 'suspended' ? 'suspended' : 'active',
          keys: keys
            .filter((k) => k.status === 'active')
            .map((k) => ({ id: k.id, name: k.name ?? null, createdAt: k.createdAt ?? null })),
        };
      },
    ),

    readWalletForImport: boundary(async (input: { subaccountId: string }): Promise<ImportedWallet> => {
      const { wallet } = await platform.getWallet({ subaccountId: input.subaccountId });
      return {
        balanceMicroUsd: wallet.balanceKnown ? (wallet.balanceMicroUsd ?? null) : null,
        transferKeys: (wallet.transfers ?? []).map((t) => t.idempotencyKey).filter((k): k is string => !!k),
        transferIds: (wallet.transfers ?? []).map((t) => t.id).filter((k): k is string => !!k),
        ours: (wallet.transfers ?? []).flatMap((t) =>
          t.idempotencyKey && OUR_TRANSFER_KEY.test(t.idempotencyKey) && t.amountMicroUsd
            ? [{ id: t.id ?? null, idempotencyKey: t.idempotencyKey, amountMicroUsd: t.amountMicroUsd }]
            : [],
        ),
      };
    }),

    recordImportedTenant: boundary(
      async (input: {
        externalRef: string;
        name: string;
        subaccountId: string;
        refSource: 'platform' | 'map';
        requestedBy: string;
        subaccount: ImportedSubaccount;
        wallet: ImportedWallet;
      }) => {
        const origin = auditOrigin();
        const ours = (input.wallet.ours ?? []).map((t) => ({
          ...t,
          initial: isInitialFundingKey(input.externalRef, t.idempotencyKey),
        }));
        const oursSum = ours.reduce((sum, t) => sum + BigInt(t.amountMicroUsd), 0n);
        const balance = input.wallet.balanceMicroUsd;
        const recorded = await recordImport(
          pool,
          {
            externalRef: input.externalRef,
            name: input.name,
            subaccountId: input.subaccountId,
            createIdempotencyKey: subaccountCreateKey(input.externalRef),
            refSource: input.refSource,
            platformStatus: input.subaccount.status,
            keys: input.subaccount.keys,
            // What our own transfers do not explain (a tenant spends, so never below zero).
            openingBalanceMicroUsd:
              balance === null ? null : (BigInt(balance) > oursSum ? BigInt(balance) - oursSum : 0n).toString(),
            restoredTransfers: ours,
            openingTransferKey: openingTransferKey(input.externalRef),
            knownTransferKeys: input.wallet.transferKeys,
            knownTransferIds: input.wallet.transferIds,
            requestedBy: input.requestedBy,
            workflowId: origin.workflowId ?? 'unknown',
          },
          { ...origin, actor: `operator:${input.requestedBy}` },
        );
        if (recorded.outcome === 'conflict') throw activityFailure(FailureCode.EXTERNAL_REF_CONFLICT, recorded.message);
        return recorded;
      },
    ),
  };
}
