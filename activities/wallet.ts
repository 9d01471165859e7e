import { appendAudit } from '../src/db/audit-store.js';
import { noteParentShortfall } from '../src/db/funding-store.js';
import { withTransaction, type Queryable } from '../src/db/pool.js';
import {
  claimRestoredKey,
  claimTransferSend,
  endTransferSend,
  findTransferIntent,
  insertTransferIntentUnlessClosing,
  isIdempotencyKeyTaken,
  rewriteTransferIntent,
  listTransferIntents,
  updateTransferIntent,
  type TransferIntentRow,
  type TransferSend,
  type TransferState,
} from '../src/db/transfer-intents-store.js';
import {
  PlatformAmbiguousError,
  PlatformBusinessStateError,
  PlatformDefiniteError,
  PlatformIdempotencyConflictError,
  PlatformError,
  PlatformTransientError,
} from '../src/platform/index.js';
import { isTenantRecordMissing, recordLostTransfer, withTenantRecord } from './restored-records.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { activityFailure, boundary, tenantClosed, TenantRecordGone } from './failures.js';
import { transferKey } from './idempotency-keys.js';
import { OUR_TRANSFER_KEY } from '../src/domain/drift-kinds.js';
import { checkTransferVerdict } from '../src/domain/operator-decisions.js';
import { FailureCode } from '../src/domain/failures.js';

export interface FundWalletInput {
  externalRef: string;
  subaccountId: string;
  amountMicroUsd: string;
  /** One logical transfer per purpose per tenant, e.g. `initial-funding`. */
  purpose: string;
}

/** What the workflow needs to decide; business states are results, not exceptions. */
export type FundWalletResult =
  | {
      state: 'succeeded';
      transferId: string | null;
      resolution: string | null;
      /** The idempotency key the platform made it under (absent from results recorded before issue 48's hold). */
      idempotencyKey?: string;
    }
  | { state: 'insufficient_balance'; attempts: number }
  | {
      state: 'unknown';
      unknownSince: string;
      /**
       * Set when the tenant's record is gone under the run (a restore of the records, outside an onboarding): what it
       * waits for. Each answer is a new `unknownSince`, so no deadline passes: the run waits for the import.
       */
      recordsMissing?: string;
    }
  | { state: 'needs_operator'; unknownSince: string | null }
  | { state: 'failed'; code: string };

export interface ResolveTransferInput {
  externalRef: string;
  purpose: string;
  outcome: 'applied' | 'not-applied';
  operator: string;
  reason: string;
  /** The four-eyes approval the run checked and used for this verdict (workflows/approval-gate.ts). */
  approvalId?: string;
}

const OPEN: readonly TransferState[] = ['pending', 'unknown', 'needs_operator'];

/**
 * A send claimed this long ago and never ended is given up: its attempt died (a local activity lives 30 s, a
 * platform call times out well within that), so it can no longer apply and a refusal may take a fresh key.
 */
const SEND_LEASE_SECONDS = 300;

function resultOf(row: TransferIntentRow): FundWalletResult {
  switch (row.state) {
    case 'succeeded':
      return {
        state: 'succeeded',
        transferId: row.platformTransferId,
        resolution: row.resolution,
        idempotencyKey: row.idempotencyKey,
      };
    case 'unknown':
      return { state: 'unknown', unknownSince: (row.unknownSince ?? row.updatedAt).toISOString() };
    case 'needs_operator':
      return { state: 'needs_operator', unknownSince: row.unknownSince?.toISOString() ?? null };
    case 'failed':
      return { state: 'failed', code: row.failureCode ?? 'FAILED' };
    default:
      return { state: 'insufficient_balance', attempts: row.attempts };
  }
}

/** A transfer whose tenant's record is gone: unknown to the records until the import writes it again. */
function waitingForRecords(gone: TenantRecordGone): FundWalletResult {
  return { state: 'unknown', unknownSince: new Date().toISOString(), recordsMissing: gone.message };
}

export function createWalletActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;

  /** Moves the intent on with its audit row, in one statement; a settled intent is left as it is. */
  async function settle(
    intent: TransferIntentRow,
    change: Parameters<typeof updateTransferIntent>[3],
    action: string,
    details: Record<string, unknown>,
    send?: TransferSend,
    clearShortfall?: Parameters<typeof updateTransferIntent>[6],
  ) {
    const audit = {
      ...auditOrigin(),
      action,
      externalRef: intent.externalRef,
      subject: intent.idempotencyKey,
      details: { amountMicroUsd: intent.amountMicroUsd, ...details },
    };
    const moved = await updateTransferIntent(pool, intent.id, OPEN, change, audit, send, clearShortfall);
    if (!moved) return reread(pool, intent, { intent, change });
    const { shortfallCleared, ...row } = moved;
    if (shortfallCleared) await auditShortfallCleared(intent, shortfallCleared);
    return row;
  }

  /**
   * The intent as it is now, after a settle that found it no longer open. A row the records lost under the run (a
   * restore) is written again with the outcome this run saw: the run re-reads what it knows instead of failing a
   * transfer the platform made.
   */
  async function reread(
    db: Queryable,
    intent: Pick<TransferIntentRow, 'externalRef' | 'purpose'>,
    settling?: { intent: TransferIntentRow; change: Parameters<typeof updateTransferIntent>[3] },
  ): Promise<TransferIntentRow> {
    const row = await findTransferIntent(db, intent.externalRef, intent.purpose);
    if (row) return row;
    const rewritten = settling
      ? await rewriteTransferIntent(db, settling.intent, settling.change, {
          ...auditOrigin(),
          action: 'transfer.record_restored',
          externalRef: intent.externalRef,
          subject: settling.change.nextIdempotencyKey ?? settling.intent.idempotencyKey,
          details: {
            purpose: intent.purpose,
            amountMicroUsd: settling.intent.amountMicroUsd,
            state: settling.change.state,
          },
        }).catch((error: unknown) => {
          if (isTenantRecordMissing(error)) throw new TenantRecordGone(intent.externalRef);
          throw error;
        })
      : undefined;
    const now = rewritten ?? (settling ? await findTransferIntent(db, intent.externalRef, intent.purpose) : undefined);
    if (!now)
      throw activityFailure(
        FailureCode.TENANT_NOT_FOUND,
        `no ${intent.purpose} transfer is recorded for ${intent.externalRef}`,
      );
    return now;
  }

  /**
   * The parent's insufficient-balance state (src/domain/parent-shortfall.ts), kept here where the
   * platform's answers are seen, for every kind of transfer: a refusal records its amount; a success
   * at least that large, sent after the state was set, clears it. Written after the intent (a crash
   * in between leaves the state as it was: the refusal is met again on the retry, a success only
   * fails to clear it, which the operator's parent-funded does).
   */
  async function noteShortfall(intent: TransferIntentRow, requestId: string | null): Promise<void> {
    const changed = await noteParentShortfall(pool, intent.amountMicroUsd, 'worker');
    if (changed === 'unchanged') return;
    await appendAudit(pool, {
      ...auditOrigin(),
      action: 'parent.insufficient_balance',
      externalRef: intent.externalRef,
      subject: intent.idempotencyKey,
      details: { amountMicroUsd: intent.amountMicroUsd, state: changed, requestId },
    });
  }

  /** The state a success cleared (settle's statement clears it): audited as the parent funded. */
  async function auditShortfallCleared(
    intent: TransferIntentRow,
    cleared: { since: Date; refusedMicroUsd: string },
  ): Promise<void> {
    await appendAudit(pool, {
      ...auditOrigin(),
      action: 'parent.funded',
      externalRef: intent.externalRef,
      subject: intent.idempotencyKey,
      details: {
        reason:
          `a transfer of ${intent.amountMicroUsd} micro-USD succeeded after ${cleared.refusedMicroUsd} was ` +
          `refused`,
        refusedMicroUsd: cleared.refusedMicroUsd,
        insufficientSince: cleared.since.toISOString(),
        stateCleared: true,
      },
    });
  }

  /**
   * One transfer call under the intent's current key; every outcome is written before returning. The send is
   * claimed first (transfer_sends) and ended with its definite outcome, so a refusal takes a fresh key only when no
   * sibling attempt's send under the old key may still be in flight (two attempts of one step can run at once). An
   * ambiguous send is never ended: it may still apply, so the key stays until its lease is over.
   */
  async function attempt(intent: TransferIntentRow, subaccountId: string): Promise<TransferIntentRow> {
    const claim = await claimTransferSend(pool, intent.id, intent.idempotencyKey);
    // A sibling moved the intent on meanwhile (settled it, or took a fresh key): what it recorded is the answer.
    if (claim === undefined) return reread(pool, intent);
    const send = { claim, idempotencyKey: intent.idempotencyKey, leaseSeconds: SEND_LEASE_SECONDS };
    // The worker's clock, compared with the database's when clearing: a skew only delays a clear or
    // lets a success sent within the skew of a refusal clear it (the next refusal sets it again).
    const sentAt = new Date();
    try {
      const { transfer, requestId } = await platform.transfer({
        subaccountId,
        amountMicroUsd: intent.amountMicroUsd,
        idempotencyKey: intent.idempotencyKey,
      });
      // The intent, its audit row, its event and (when this success covers it) the parent's shortfall cleared.
      return await settle(
        intent,
        { state: 'succeeded', platformTransferId: transfer.id ?? null },
        'transfer.succeeded',
        { requestId },
        send,
        { sentAt, updatedBy: 'worker' },
      );
    } catch (error) {
      if (error instanceof PlatformAmbiguousError || error instanceof PlatformIdempotencyConflictError) {
        return settle(intent, { state: 'unknown', failureCode: error.code }, 'transfer.unknown', {
          requestId: error.requestId ?? null,
          code: error.code,
        });
      }
      if (error instanceof PlatformBusinessStateError && error.code === 'INSUFFICIENT_BALANCE') {
        // Definitely not applied: the next attempt may (must) use a fresh key, since the platform
        // may replay this refusal for the old one — once no sibling's send under the old key is in flight.
        const next = transferKey(intent.externalRef, intent.purpose, intent.attempts + 1);
        const row = await settle(
          intent,
          { state: 'pending', failureCode: error.code, nextIdempotencyKey: next },
          'transfer.insufficient_balance',
          { requestId: error.requestId ?? null },
          send,
        );
        await noteShortfall(intent, error.requestId ?? null);
        return row;
      }
      if (error instanceof PlatformDefiniteError) {
        return settle(
          intent,
          { state: 'failed', failureCode: error.code },
          'transfer.failed',
          { requestId: error.requestId ?? null, code: error.code },
          send,
        );
      }
      // Transient: nothing happened, Temporal retries under the same key. Anything else (a failure to record an
      // outcome) leaves the send open until its lease is over: it may have applied.
      if (error instanceof PlatformTransientError) await endTransferSend(pool, intent.id, claim).catch(() => undefined);
      throw error;
    }
  }

  /**
   * An `unknown` transfer: read the wallet first. A transfer listed under our key settles it; a
   * wallet that shows it absent (its transfer list, or for initial funding a zero balance) makes
   * a retry under the SAME key safe. Anything else stays unknown, never a new key.
   */
  async function reconcile(intent: TransferIntentRow, subaccountId: string): Promise<TransferIntentRow> {
    const { wallet, requestId } = await platform.getWallet({ subaccountId });
    if (wallet.transfers) {
      const match = wallet.transfers.find((t) => t.idempotencyKey === intent.idempotencyKey);
      if (match)
        return settle(
          intent,
          { state: 'succeeded', platformTransferId: match.id ?? null, resolution: 'wallet-transfer-list' },
          'transfer.reconciled',
          { requestId, by: 'wallet-transfer-list' },
        );
      return attempt(intent, subaccountId);
    }
    if (wallet.balanceKnown && intent.purpose === 'initial-funding') {
      const balance = BigInt(wallet.balanceMicroUsd!);
      if (balance === 0n) return attempt(intent, subaccountId);
      if (balance === BigInt(intent.amountMicroUsd)) {
        return settle(intent, { state: 'succeeded', resolution: 'wallet-balance' }, 'transfer.reconciled', {
          requestId,
          by: 'wallet-balance',
        });
      }
    }
    // The wallet cannot tell: the contract's other way is a retry under the same key.
    return attempt(intent, subaccountId);
  }

  /**
   * Transfers the wallet lists under one of our keys (`tpo-xfer-…`) that no intent records, recorded as made (the
   * onboarding's funding with its purpose, any other under its key, which a top-up of that key claims), and intents
   * still pending or unknown whose key the wallet lists with their amount, recorded succeeded. Each audited. A wallet
   * that lists no transfers (its record's fields are not shown) changes nothing.
   */
  async function recordWhatTheWalletShows(
    externalRef: string,
    subaccountId: string,
    intents: TransferIntentRow[],
  ): Promise<boolean> {
    // Best effort: a wallet that cannot be read now leaves the close to its own reconciling, as before.
    const read = await platform.getWallet({ subaccountId }).catch((error: unknown) => {
      if (error instanceof PlatformError) return undefined;
      throw error;
    });
    if (!read) return false;
    let changed = false;
    const { wallet } = read;
    const byKey = new Map(intents.map((i) => [i.idempotencyKey, i]));
    for (const t of wallet.transfers ?? []) {
      if (!t.idempotencyKey || !OUR_TRANSFER_KEY.test(t.idempotencyKey) || !t.amountMicroUsd) continue;
      const intent = byKey.get(t.idempotencyKey);
      const audit = {
        ...auditOrigin(),
        action: 'transfer.record_restored',
        externalRef,
        subject: t.idempotencyKey,
        details: { amountMicroUsd: t.amountMicroUsd, platformTransferId: t.id ?? null, seen: 'wallet, before a close' },
      };
      if (!intent) {
        const recorded = await recordLostTransfer(pool, externalRef, {
          id: t.id ?? null,
          idempotencyKey: t.idempotencyKey,
          amountMicroUsd: t.amountMicroUsd,
          createdAt: t.createdAt,
        });
        if (recorded) await appendAudit(pool, audit);
        changed ||= recorded !== undefined;
      } else if (
        (intent.state === 'pending' || intent.state === 'unknown') &&
        intent.amountMicroUsd === t.amountMicroUsd
      ) {
        const settled = await updateTransferIntent(
          pool,
          intent.id,
          ['pending', 'unknown'],
          { state: 'succeeded', platformTransferId: t.id ?? null, resolution: 'close:wallet-transfer-list' },
          audit,
        );
        changed ||= settled !== undefined;
      }
    }
    return changed;
  }

  /** fundWallet's step; a tenant record gone under a run outside an onboarding is thrown (TenantRecordGone). */
  async function fundWalletOnce(input: FundWalletInput): Promise<FundWalletResult> {
    // The tenant's check (no new transfer once a close has begun) and the intent, in one statement.
    // The tenant's record gone under a running onboarding (a restore): written again from the run, then the intent,
    // whose key is the one the platform saw before (the intent's digest): sent again, it gets the first answer.
    // Outside an onboarding a record gone is waited for (the import writes it again): the transfer may be made.
    const intent = {
      externalRef: input.externalRef,
      purpose: input.purpose,
      amountMicroUsd: input.amountMicroUsd,
      idempotencyKey: transferKey(input.externalRef, input.purpose, 1),
    };
    const insert = () => insertTransferIntentUnlessClosing(pool, intent, auditOrigin());
    // The key taken: drift or the import recorded this run's transfer under its key alone meanwhile (the run takes
    // it as made), or a sibling attempt inserted the same intent at the same moment (ON CONFLICT arbitrates the
    // purpose only, so the key's index refuses the race): inserted again, the row found is the answer.
    const insertOrClaim = () =>
      insert().catch(async (error: unknown) => {
        if (!isIdempotencyKeyTaken(error)) throw error;
        await claimRestoredKey(pool, intent);
        return insert();
      });
    const written = await withTenantRecord(deps, input, insertOrClaim, 'wait');
    if ('closing' in written) throw tenantClosed(input.externalRef, written.closing);
    const { row, inserted } = written;
    if (!inserted && row.amountMicroUsd !== input.amountMicroUsd) {
      throw activityFailure(
        FailureCode.TRANSFER_CONFLICT,
        `a ${input.purpose} transfer of another amount is already recorded for ${input.externalRef}`,
      );
    }
    if (row.state === 'pending') return resultOf(await attempt(row, input.subaccountId));
    if (row.state === 'unknown') {
      try {
        return resultOf(await reconcile(row, input.subaccountId));
      } catch (error) {
        // Still cannot tell: stay unknown (same key kept) and let the workflow's deadline decide.
        if (error instanceof PlatformTransientError || error instanceof PlatformAmbiguousError) return resultOf(row);
        throw error;
      }
    }
    return resultOf(row);
  }

  return {
    fundWallet: boundary(async (input: FundWalletInput): Promise<FundWalletResult> =>
      fundWalletOnce(input).catch((error: unknown) => {
        if (error instanceof TenantRecordGone) return waitingForRecords(error);
        throw error;
      }),
    ),

    /**
     * Before a close: every transfer still `unknown` is reconciled the same way (wallet, then the
     * same key). Returns the intents that remain open, for an operator.
     */
    reconcileOpenTransfers: boundary(
      async (input: {
        externalRef: string;
        subaccountId: string;
      }): Promise<Array<{ purpose: string; state: TransferState; idempotencyKey: string }>> => {
        const open: Array<{ purpose: string; state: TransferState; idempotencyKey: string }> = [];
        const intents = await listTransferIntents(pool, input.externalRef);
        // The last moment the wallet can be read: what it lists under our keys that the records lost (a restore of
        // them) is recorded now, never sent again, so the close's statement and the records hold every transfer.
        const changed = await recordWhatTheWalletShows(input.externalRef, input.subaccountId, intents);
        for (const intent of changed ? await listTransferIntents(pool, input.externalRef) : intents) {
          let row = intent;
          if (row.state === 'unknown') {
            row = await reconcile(row, input.subaccountId).catch((error: unknown) => {
              if (error instanceof PlatformTransientError || error instanceof PlatformAmbiguousError) return row;
              throw error;
            });
          }
          if (row.state === 'unknown' || row.state === 'needs_operator')
            open.push({ purpose: row.purpose, state: row.state, idempotencyKey: row.idempotencyKey });
        }
        return open;
      },
    ),

    markTransferNeedsOperator: boundary(
      async (input: { externalRef: string; purpose: string }): Promise<FundWalletResult> => {
        return withTransaction(pool, async (tx) => {
          const current = await reread(tx, input);
          const row = await updateTransferIntent(tx, current.id, ['unknown'], {
            state: 'needs_operator',
            failureCode: current.failureCode,
          });
          if (row)
            await appendAudit(tx, {
              ...auditOrigin(),
              action: 'transfer.needs_operator',
              externalRef: input.externalRef,
              subject: row.idempotencyKey,
            });
          return resultOf(row ?? current);
        });
      },
    ),

    /** An operator's verdict on an unknown transfer; `not-applied` moves to a fresh key. */
    resolveTransferByOperator: boundary(async (input: ResolveTransferInput): Promise<FundWalletResult> => {
      // The workflows' validators refuse a bad verdict first; this keeps a typo from ever re-sending money.
      const checked = checkTransferVerdict({ outcome: input.outcome, operator: input.operator, reason: input.reason });
      if (!checked.ok) throw activityFailure(FailureCode.INVALID_INPUT, checked.problems.join('; '));
      return withTransaction(pool, async (tx) => {
        const current = await reread(tx, input);
        const change =
          input.outcome === 'applied'
            ? ({ state: 'succeeded', resolution: `operator:${input.operator}` } as const)
            : ({
                state: 'pending',
                resolution: `operator:${input.operator}:not-applied`,
                nextIdempotencyKey: transferKey(input.externalRef, input.purpose, current.attempts + 1),
              } as const);
        const row = await updateTransferIntent(tx, current.id, ['unknown', 'needs_operator'], change);
        if (row) {
          await appendAudit(tx, {
            actor: `operator:${input.operator}`,
            workflowId: auditOrigin().workflowId,
            runId: auditOrigin().runId,
            action: 'transfer.resolved_by_operator',
            externalRef: input.externalRef,
            subject: current.idempotencyKey,
            details: {
              outcome: input.outcome,
              reason: input.reason,
              ...(input.approvalId ? { approval: input.approvalId } : {}),
            },
          });
        }
        return resultOf(row ?? current);
      });
    }),
  };
}
