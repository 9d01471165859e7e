import { withTransaction } from '../src/db/pool.js';
import { reserveTopUp, type CapName } from '../src/db/top-ups-store.js';
import { findTransferIntent, updateTransferIntent } from '../src/db/transfer-intents-store.js';
import { sameTopUpRequest, type ParsedFundTenantInput } from '../src/domain/top-up-input.js';
import { topUpPurpose } from '../src/domain/top-up-ids.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary } from './failures.js';
import { FailureCode } from '../src/domain/failures.js';
import { transferKey } from './idempotency-keys.js';

/**
 * The start of a top-up: the intent is written (with its cap reservation, in one transaction)
 * before any platform call; from there the transfer runs through the same fundWallet as onboarding.
 */
export type RecordTopUpResult =
  | { state: 'recorded'; subaccountId: string; purpose: string; intentState: string; kind: string; requestedBy: string }
  | { state: 'cap_refused'; cap: CapName | string; purpose: string }
  | { state: 'skipped'; why: 'parent_insufficient' | 'balance_changed' | 'records_restored' };

export function createTopUpActivities(deps: ActivityDeps) {
  const { pool } = deps;
  return {
    recordTopUp: boundary(async (input: ParsedFundTenantInput): Promise<RecordTopUpResult> => {
      const purpose = topUpPurpose(input.idempotencyKey);
      const reserved = await withTransaction(pool, (tx) =>
        reserveTopUp(
          tx,
          {
            externalRef: input.externalRef,
            callerKey: input.idempotencyKey,
            purpose,
            idempotencyKey: transferKey(input.externalRef, purpose, 1),
            amountMicroUsd: input.amountMicroUsd,
            kind: input.kind,
            requestedBy: input.requestedBy,
            reason: input.reason ?? null,
            balanceReadAt: input.balanceReadAt ?? null,
          },
          auditOrigin(),
        ),
      );
      switch (reserved.outcome) {
        case 'tenant_missing':
          throw activityFailure(
            FailureCode.TENANT_NOT_FOUND,
            `no tenant with external ref ${input.externalRef} in our records`,
          );
        case 'tenant_closed':
          throw activityFailure(
            FailureCode.TENANT_CLOSED,
            `tenant ${input.externalRef} is ${reserved.status}: no new transfers`,
          );
        case 'tenant_not_provisioned':
          throw activityFailure(
            FailureCode.TENANT_NOT_PROVISIONED,
            `tenant ${input.externalRef} is ${reserved.status}: top-ups need an active or ` +
              `suspended tenant with a sub-account`,
          );
        case 'money_held':
          throw activityFailure(FailureCode.RECORDS_RESTORED, reserved.message);
        case 'skipped':
          return { state: 'skipped', why: reserved.why };
        case 'refused':
          return { state: 'cap_refused', cap: capOf(reserved.intent.failureCode), purpose };
        case 'existing':
        case 'reserved': {
          const { intent } = reserved;
          if (!sameTopUpRequest(intent, input)) {
            throw activityFailure(
              FailureCode.IDEMPOTENCY_KEY_REUSED,
              `idempotency key ${input.idempotencyKey} was already used for tenant ` +
                `${input.externalRef} with another amount or reason`,
            );
          }
          if (intent.state === 'refused') return { state: 'cap_refused', cap: capOf(intent.failureCode), purpose };
          return {
            state: 'recorded',
            subaccountId: reserved.subaccountId,
            purpose,
            intentState: intent.state,
            kind: intent.kind,
            requestedBy: intent.requestedBy ?? input.requestedBy,
          };
        }
      }
    }),

    /** A cancelled top-up that never left `pending` gives its cap reservation back; an unknown one is kept. */
    cancelTopUp: boundary(
      async (input: { externalRef: string; purpose: string }): Promise<{ state: string } | null> => {
        const intent = await findTransferIntent(pool, input.externalRef, input.purpose);
        if (!intent) return null;
        const audit = {
          ...auditOrigin(),
          action: 'transfer.cancelled',
          externalRef: input.externalRef,
          subject: intent.idempotencyKey,
          details: { amountMicroUsd: intent.amountMicroUsd },
        };
        const row = await updateTransferIntent(pool, intent.id, ['pending'], { state: 'cancelled' }, audit);
        return { state: (row ?? intent).state };
      },
    ),

    /**
     * Kept for the runs that call it (fundTenant on INSUFFICIENT_BALANCE): the parent-wide state, with
     * the refused amount, is now written by fundWallet itself where the refusal is seen. Writing it
     * here too, without an amount, could reset a state an operator just cleared to "every amount held".
     */
    noteParentInsufficient: boundary(async (_input: { externalRef: string }): Promise<void> => {}),
  };
}

function capOf(failureCode: string | null): string {
  return failureCode?.replace(/^CAP_/, '').toLowerCase() ?? 'unknown';
}
