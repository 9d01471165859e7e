import { appendAudit } from '../db/audit-store.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { parentKeyAad } from '../db/parent-keys-store.js';
import { webhookSecretAad } from './webhook-secrets.js';
import { tenantTokenAad, type Vault } from './vault.js';

/**
 * Master-key rotation, step 2 of 3 (1: put the new key FIRST in SECRETS_KEYS on every process;
 * 2: reseal; 3: once `secrets reseal --check` reports nothing left, drop the old key): every sealed
 * tenant token and webhook secret is re-encrypted under the current key, one row per transaction,
 * each row checked to open before it is replaced. Safe to run again; rows already current are skipped.
 */
export interface ResealReport {
  tokens: { resealed: number; current: number };
  webhookSecrets: { resealed: number; current: number };
  /** The parent's platform keys (parent_keys): they too must open after the old master key is dropped. */
  parentKeys: { resealed: number; current: number };
}

export async function resealAll(
  deps: { pool: Pool; vault: Vault },
  options: { dryRun?: boolean } = {},
): Promise<ResealReport> {
  const report: ResealReport = {
    tokens: { resealed: 0, current: 0 },
    webhookSecrets: { resealed: 0, current: 0 },
    parentKeys: { resealed: 0, current: 0 },
  };
  const tokens = await deps.pool.query<{ id: string; externalRef: string; keyId: string; sealed: string }>(
    `SELECT s.tenant_key_id AS id, k.external_ref AS "externalRef", k.platform_key_id AS "keyId", s.sealed
       FROM key_secrets s JOIN tenant_keys k ON k.id = s.tenant_key_id ORDER BY s.tenant_key_id`,
  );
  for (const row of tokens.rows) {
    if (!deps.vault.needsReseal(row.sealed)) {
      report.tokens.current++;
      continue;
    }
    const sealed = deps.vault.reseal(row.sealed, tenantTokenAad({ externalRef: row.externalRef, keyId: row.keyId }));
    if (!options.dryRun) {
      await deps.pool.query(
        `UPDATE key_secrets SET sealed = $2::text, master_key_id = split_part($2::text, ` +
          `'.', 2) WHERE tenant_key_id = $1::bigint AND sealed = $3::text`,
        [row.id, sealed, row.sealed],
      );
    }
    report.tokens.resealed++;
  }
  const secrets = await deps.pool.query<{ registrationId: string; generation: number; sealed: string }>(
    `SELECT registration_id AS "registrationId", generation, sealed FROM ` +
      `webhook_secrets ORDER BY registration_id, generation`,
  );
  for (const row of secrets.rows) {
    if (!deps.vault.needsReseal(row.sealed)) {
      report.webhookSecrets.current++;
      continue;
    }
    const sealed = deps.vault.reseal(row.sealed, webhookSecretAad(row));
    if (!options.dryRun) {
      await deps.pool.query(
        `UPDATE webhook_secrets SET sealed = $3::text WHERE registration_id = $1::text ` +
          `AND generation = $2::int AND sealed = $4::text`,
        [row.registrationId, row.generation, sealed, row.sealed],
      );
    }
    report.webhookSecrets.resealed++;
  }
  const parentKeys = await deps.pool.query<{ id: string; sealed: string }>(
    `SELECT id::text AS id, sealed FROM parent_keys WHERE sealed IS NOT NULL ORDER BY id`,
  );
  for (const row of parentKeys.rows) {
    if (!deps.vault.needsReseal(row.sealed)) {
      report.parentKeys.current++;
      continue;
    }
    const sealed = deps.vault.reseal(row.sealed, parentKeyAad(row.id));
    if (!options.dryRun) {
      await deps.pool.query(
        `UPDATE parent_keys SET sealed = $2::text, master_key_id = split_part($2::text, '.', 2), updated_at = now()
          WHERE id = $1::bigint AND sealed = $3::text`,
        [row.id, sealed, row.sealed],
      );
    }
    report.parentKeys.resealed++;
  }
  if (!options.dryRun) {
    await withTransaction(deps.pool, (tx) =>
      appendAudit(tx, { actor: 'operator', action: 'secrets.resealed', details: { ...report } }),
    );
  }
  return report;
}
