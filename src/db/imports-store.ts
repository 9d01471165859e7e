import { appendAudit, type AuditEntry } from './audit-store.js';
import { withTransaction, type Pool, type Queryable } from './pool.js';
import { recordRestoredTransfer } from './transfer-intents-store.js';
import { ONBOARDING_PURPOSE } from '../domain/onboarding.js';

/**
 * Imported tenants: the ownership record (as onboarding makes it), the import row, the existing keys
 * as `unmanaged` key records, and the opening balance in the ledger — in ONE transaction, so an
 * import is either wholly recorded or not at all, and a second one finds it and writes nothing.
 */
export interface ImportRecordInput {
  externalRef: string;
  name: string;
  subaccountId: string;
  createIdempotencyKey: string;
  refSource: 'platform' | 'map';
  platformStatus: 'active' | 'suspended';
  keys: Array<{ id: string; name: string | null; createdAt: string | null }>;
  openingBalanceMicroUsd: string | null;
  openingTransferKey: string;
  knownTransferKeys: string[];
  knownTransferIds: string[];
  /** Our own transfers the records lost (a restore), recorded as made under their keys (initial: the onboarding's). */
  restoredTransfers?: Array<{ id: string | null; idempotencyKey: string; amountMicroUsd: string; initial: boolean }>;
  requestedBy: string;
  workflowId: string;
}

export type ImportRecordOutcome =
  | { outcome: 'imported' | 'already_imported'; unmanagedKeys: string[]; openingBalanceMicroUsd: string | null }
  | { outcome: 'conflict'; message: string };

export async function findOwners(
  db: Queryable,
  refs: string[],
  subaccountIds: string[],
): Promise<Array<{ externalRef: string; subaccountId: string | null }>> {
  const { rows } = await db.query<{ externalRef: string; subaccountId: string | null }>(
    `SELECT external_ref AS "externalRef", subaccount_id AS "subaccountId" FROM tenants
      WHERE external_ref = ANY($1::text[]) OR subaccount_id = ANY($2::text[])`,
    [refs, subaccountIds],
  );
  return rows;
}

export async function recordImport(
  pool: Pool,
  input: ImportRecordInput,
  origin: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<ImportRecordOutcome> {
  return withTransaction(pool, async (tx) => {
    const audit = (action: string, subject: string, details: Record<string, unknown>) =>
      appendAudit(tx, { ...origin, action, externalRef: input.externalRef, subject, details });
    const owner = await tx.query<{ externalRef: string }>(
      `SELECT external_ref AS "externalRef" FROM tenants WHERE subaccount_id = $1::text AND external_ref <> $2::text`,
      [input.subaccountId, input.externalRef],
    );
    if (owner.rows[0])
      return {
        outcome: 'conflict',
        message: `sub-account ${input.subaccountId} is already recorded as tenant ${owner.rows[0].externalRef}`,
      };
    const inserted = await tx.query(
      `INSERT INTO tenants (external_ref, name, subaccount_id, status, create_idempotency_key)
       VALUES ($1::text, $2::text, $3::text, $4::text, $5::text)
       ON CONFLICT (external_ref) DO NOTHING RETURNING external_ref`,
      [input.externalRef, input.name, input.subaccountId, input.platformStatus, input.createIdempotencyKey],
    );
    if (!inserted.rowCount) {
      const { rows } = await tx.query<{ subaccountId: string; opening: string | null }>(
        `SELECT subaccount_id AS "subaccountId", opening_balance_micro_usd::text AS opening
           FROM tenant_imports WHERE external_ref = $1::text FOR UPDATE`,
        [input.externalRef],
      );
      if (rows[0]?.subaccountId === input.subaccountId) {
        const keys = await tx.query<{ id: string }>(
          `SELECT platform_key_id AS id FROM tenant_keys WHERE external_ref = $1::text AND ` +
            `key_name LIKE 'imported-%' ORDER BY generation`,
          [input.externalRef],
        );
        return {
          outcome: 'already_imported',
          unmanagedKeys: keys.rows.map((k) => k.id),
          openingBalanceMicroUsd: rows[0].opening,
        };
      }
      return { outcome: 'conflict', message: `ref ${input.externalRef} is already ours (a tenant record carries it)` };
    }
    await tx.query(
      `INSERT INTO tenant_imports (external_ref, subaccount_id, ref_source, platform_status, opening_balance_micro_usd,
                                   known_transfer_keys, known_transfer_ids, requested_by, workflow_id)
       VALUES ($1::text, $2::text, $3::text, $4::text, $5::numeric, $6::jsonb, $7::jsonb, $8::text, $9::text)`,
      [
        input.externalRef,
        input.subaccountId,
        input.refSource,
        input.platformStatus,
        input.openingBalanceMicroUsd,
        JSON.stringify(input.knownTransferKeys),
        JSON.stringify(input.knownTransferIds),
        input.requestedBy,
        input.workflowId,
      ],
    );
    await audit('tenant.imported', input.subaccountId, {
      name: input.name,
      refSource: input.refSource,
      status: input.platformStatus,
      unmanagedKeys: input.keys.length,
      openingBalanceMicroUsd: input.openingBalanceMicroUsd,
      requestedBy: input.requestedBy,
    });
    // Oldest first: generation order follows the platform's creation order.
    const keys = [...input.keys].sort(
      (a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.id.localeCompare(b.id),
    );
    for (const [index, key] of keys.entries()) {
      await tx.query(
        `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, platform_key_id, status, activated_at)
         VALUES ($1::text, 'default', $2::int, $3::text, $4::text, 'unmanaged', $5::timestamptz)`,
        [input.externalRef, index + 1, `imported-${key.id}`, key.id, key.createdAt],
      );
      await audit('key.recorded_unmanaged', key.id, { slot: 'default', generation: index + 1, name: key.name });
    }
    for (const t of input.restoredTransfers ?? []) {
      const row = await recordRestoredTransfer(tx, {
        externalRef: input.externalRef,
        purpose: t.initial ? ONBOARDING_PURPOSE : `restored:${t.idempotencyKey}`,
        kind: t.initial ? 'initial' : 'restored',
        amountMicroUsd: t.amountMicroUsd,
        idempotencyKey: t.idempotencyKey,
        platformTransferId: t.id,
      });
      if (row) await audit('transfer.restored', t.idempotencyKey, { amountMicroUsd: t.amountMicroUsd, by: 'import' });
    }
    if (input.openingBalanceMicroUsd !== null && BigInt(input.openingBalanceMicroUsd) > 0n) {
      await tx.query(
        `INSERT INTO transfer_intents (external_ref, purpose, amount_micro_usd, idempotency_key, state, kind,
          requested_by, reason)
         VALUES ($1::text, 'opening-balance', $2::numeric, $3::text, 'succeeded', 'opening', $4::text,
           'wallet balance at import')`,
        [input.externalRef, input.openingBalanceMicroUsd, input.openingTransferKey, input.requestedBy],
      );
      await audit('transfer.opening_balance', input.openingTransferKey, {
        amountMicroUsd: input.openingBalanceMicroUsd,
        knownTransfers: input.knownTransferKeys.length + input.knownTransferIds.length,
      });
    }
    return {
      outcome: 'imported',
      unmanagedKeys: keys.map((k) => k.id),
      openingBalanceMicroUsd: input.openingBalanceMicroUsd,
    };
  });
}

/** What drift needs of an import: the transfers the wallet showed before us (explained money). */
export async function findImport(
  db: Queryable,
  externalRef: string,
): Promise<{ knownTransferKeys: string[]; knownTransferIds: string[] } | undefined> {
  const { rows } = await db.query<{ knownTransferKeys: string[]; knownTransferIds: string[] }>(
    `SELECT known_transfer_keys AS "knownTransferKeys", known_transfer_ids AS "knownTransferIds"
       FROM tenant_imports WHERE external_ref = $1::text`,
    [externalRef],
  );
  return rows[0];
}

/** The refs among `refs` that an import already recorded. */
export async function listImportedRefs(db: Queryable, refs: string[]): Promise<string[]> {
  const { rows } = await db.query<{ externalRef: string }>(
    `SELECT external_ref AS "externalRef" FROM tenant_imports WHERE external_ref = ` +
      `ANY($1::text[]) ORDER BY external_ref`,
    [refs],
  );
  return rows.map((r) => r.externalRef);
}

/** A tenant closed since a restore point, as its runs show it (src/infra/records-witness.ts). */
export interface ClosedTenantRecordInput {
  externalRef: string;
  subaccountId: string;
  createIdempotencyKey: string;
  transfers: Array<{ purpose: string; idempotencyKey: string; amountMicroUsd: string; transferId: string | null }>;
  evidence: Record<string, unknown>;
}

/**
 * Records a tenant that a restore of the records lost whole (onboarded and closed since the backup): its record,
 * closed, with the sub-account its onboarding made, and each transfer its runs made, as made (never sent again), in
 * one transaction, audited `tenant.record_restored_closed`. False when a record of the ref exists (nothing written).
 */
export async function recordClosedTenant(
  pool: Pool,
  input: ClosedTenantRecordInput,
  audit: Omit<AuditEntry, 'action' | 'externalRef' | 'subject' | 'details'>,
): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const inserted = await tx.query(
      `INSERT INTO tenants (external_ref, name, subaccount_id, status, create_idempotency_key, records_restored_at)
       VALUES ($1::text, $1::text, $2::text, 'closed', $3::text, now())
       ON CONFLICT DO NOTHING RETURNING external_ref`,
      [input.externalRef, input.subaccountId, input.createIdempotencyKey],
    );
    if (!inserted.rowCount) return false;
    for (const t of input.transfers)
      await recordRestoredTransfer(tx, {
        externalRef: input.externalRef,
        purpose: t.purpose,
        kind: t.purpose === ONBOARDING_PURPOSE ? 'initial' : 'restored',
        amountMicroUsd: t.amountMicroUsd,
        idempotencyKey: t.idempotencyKey,
        platformTransferId: t.transferId,
      });
    await appendAudit(tx, {
      ...audit,
      action: 'tenant.record_restored_closed',
      externalRef: input.externalRef,
      subject: input.subaccountId,
      details: input.evidence,
    });
    return true;
  });
}
