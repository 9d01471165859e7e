import type pg from 'pg';
import { emitEvent } from './events-store.js';
import type { Queryable } from './pool.js';

/**
 * wallet.low_balance: one event each time a tenant's balance is seen below its threshold (its own,
 * else the default) after being above it; the alert clears when a balance at or above it is seen.
 */
export async function observeBalance(
  tx: pg.PoolClient,
  input: {
    externalRef: string;
    subaccountId: string | null;
    balanceMicroUsd: string;
    defaultThresholdMicroUsd?: string;
  },
): Promise<'raised' | 'cleared' | 'unchanged'> {
  await tx.query(`INSERT INTO wallet_alerts (external_ref) VALUES ($1::text) ON CONFLICT (external_ref) DO NOTHING`, [
    input.externalRef,
  ]);
  const { rows } = await tx.query<{ threshold: string | null; lowSince: Date | null }>(
    `SELECT threshold_micro_usd::text AS threshold, low_since AS "lowSince" FROM ` +
      `wallet_alerts WHERE external_ref = $1::text FOR UPDATE`,
    [input.externalRef],
  );
  const threshold = rows[0]?.threshold ?? input.defaultThresholdMicroUsd;
  if (!threshold) return 'unchanged';
  const low = BigInt(input.balanceMicroUsd) < BigInt(threshold);
  if (low && !rows[0]?.lowSince) {
    await tx.query(`UPDATE wallet_alerts SET low_since = now(), updated_at = now() WHERE external_ref = $1::text`, [
      input.externalRef,
    ]);
    await emitEvent(tx, {
      type: 'wallet.low_balance',
      externalRef: input.externalRef,
      data: {
        externalRef: input.externalRef,
        subaccountId: input.subaccountId,
        balanceMicroUsd: input.balanceMicroUsd,
        thresholdMicroUsd: threshold,
      },
    });
    return 'raised';
  }
  if (!low && rows[0]?.lowSince) {
    await tx.query(`UPDATE wallet_alerts SET low_since = NULL, updated_at = now() WHERE external_ref = $1::text`, [
      input.externalRef,
    ]);
    return 'cleared';
  }
  return 'unchanged';
}

/** A tenant's own threshold (null: the default applies). */
export async function setLowBalanceThreshold(
  db: Queryable,
  externalRef: string,
  thresholdMicroUsd: string | null,
): Promise<void> {
  await db.query(
    `INSERT INTO wallet_alerts (external_ref, threshold_micro_usd) VALUES ($1::text, $2::numeric)
     ON CONFLICT (external_ref) DO UPDATE SET threshold_micro_usd = EXCLUDED.threshold_micro_usd, updated_at = now()`,
    [externalRef, thresholdMicroUsd],
  );
}
