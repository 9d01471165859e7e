import { observeBalance } from '../../src/db/wallet-alerts-store.js';
import type pg from 'pg';
import { emitFindingEvent } from './finding-events.js';
import { appendAudit } from '../../src/db/audit-store.js';
import { getDriftCheck, listSnapshotFor } from '../../src/db/drift-checks-store.js';
import {
  markFindingFixed,
  resolveUnseenOfTenant,
  upsertFinding,
  type DriftFindingRow,
} from '../../src/db/drift-findings-store.js';
import { withTransaction, type Queryable } from '../../src/db/pool.js';
import { listKeyRecords, markKeyRevoked } from '../../src/db/tenant-keys-store.js';
import { findTenant, recordSubaccount } from '../../src/db/tenants-store.js';
import { listTransferIntents } from '../../src/db/transfer-intents-store.js';
import { findImport } from '../../src/db/imports-store.js';
import { compareTenant, type Finding, type TenantFacts } from './compare.js';
import type { DriftFix } from '../../src/domain/drift-kinds.js';
import { DEFAULT_DRIFT_OPTIONS } from './options.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { boundary } from '../failures.js';
import type { TenantObservation } from './platform.js';

/**
 * Recording one tenant's findings: compare, upsert by natural key, resolve what was not seen, and
 * apply the database-only fixes the policy allows — all in one transaction, each change audited.
 * The platform fix (revoking an orphan key) is handed back to the workflow for the platform queue.
 */
export interface RecordTenantDriftInput {
  checkId: string;
  externalRef: string;
  observation: TenantObservation | null;
  onboardingProvenIdle: boolean;
  /** Overrides of the configured timings (the check's input); null: DRIFT_QUIET_PERIOD / DRIFT_ROTATION_MAX_AGE. */
  quietPeriodMs: number | null;
  rotationMaxAgeMs: number | null;
}
export interface RecordTenantDriftResult {
  findings: Array<{ kind: string; subject: string; change: string }>;
  resolved: number;
  fixesApplied: Array<{ kind: string; subject: string; fix: DriftFix }>;
  /** Platform fixes to run on the platform queue. */
  platformFixes: Array<{ findingId: string; kind: string; subject: string }>;
}

/** The audit row of a finding's change and, in the same transaction, its event (opened, reopened or resolved). */
export async function auditFinding(tx: pg.PoolClient, row: DriftFindingRow, action: string): Promise<void> {
  await appendAudit(tx, {
    ...auditOrigin(),
    action,
    externalRef: row.externalRef,
    subject: row.subject,
    details: { findingId: row.id, kind: row.kind, evidence: row.evidence },
  });
  await emitFindingEvent(tx, row);
}

export function createDriftRecordActivities(deps: ActivityDeps) {
  const { pool } = deps;
  const options = deps.drift ?? DEFAULT_DRIFT_OPTIONS;

  async function factsOf(input: RecordTenantDriftInput): Promise<TenantFacts | undefined> {
    const record = await findTenant(pool, input.externalRef);
    if (!record) return undefined;
    const [check, snapshot, keyRecords, transfers, imported] = await Promise.all([
      getDriftCheck(pool, input.checkId),
      listSnapshotFor(pool, input.checkId, [record.externalRef], record.subaccountId ? [record.subaccountId] : []),
      listKeyRecords(pool, record.externalRef),
      listTransferIntents(pool, record.externalRef),
      findImport(pool, record.externalRef),
    ]);
    const observed = input.observation && !input.observation.gone ? input.observation : undefined;
    return {
      record: { externalRef: record.externalRef, subaccountId: record.subaccountId, status: record.status },
      // A sub-account that vanished between the snapshot and the read is gone.
      subaccounts: snapshot
        .filter((s) => !(input.observation?.gone && s.subaccountId === record.subaccountId))
        .map((s) => ({ id: s.subaccountId, externalRef: s.externalRef, status: s.status })),
      ...(observed?.keys ? { keys: observed.keys } : {}),
      ...(observed?.wallet ? { wallet: observed.wallet } : {}),
      ...(observed && 'projectCount' in observed ? { projectCount: observed.projectCount ?? null } : {}),
      keyRecords: keyRecords.map((k) => ({
        id: k.id,
        platformKeyId: k.platformKeyId,
        status: k.status,
        slot: k.slot,
        generation: k.generation,
        activatedAt: k.activatedAt?.toISOString() ?? null,
      })),
      transfers: transfers.map((t) => ({
        idempotencyKey: t.idempotencyKey,
        state: t.state,
        amountMicroUsd: t.amountMicroUsd,
      })),
      ...(imported ? { importedTransfers: { keys: imported.knownTransferKeys, ids: imported.knownTransferIds } } : {}),
      schedules: check.schedulesKnown ? check.schedules : null,
      onboardingProvenIdle: input.onboardingProvenIdle,
      nowMs: Date.now(),
      quietPeriodMs: input.quietPeriodMs ?? options.quietPeriodMs,
      rotationMaxAgeMs: input.rotationMaxAgeMs ?? options.rotationMaxAgeMs,
    };
  }

  /** A database-only fix inside the recording transaction; false when the world moved meanwhile. */
  async function applyDatabaseFix(
    tx: Queryable,
    finding: Finding,
    keyRecords: Array<{ id: string; platformKeyId: string | null }>,
  ): Promise<boolean> {
    if (finding.fix === 'adopt_subaccount') {
      const { rows } = await tx.query<{ subaccountId: string | null }>(
        `SELECT subaccount_id AS "subaccountId" FROM tenants WHERE external_ref = $1::text FOR UPDATE`,
        [finding.externalRef],
      );
      if (!rows[0] || rows[0].subaccountId !== null) return false;
      await recordSubaccount(tx, finding.externalRef!, finding.subject);
      return true;
    }
    if (finding.fix === 'mark_key_revoked') {
      const record = keyRecords.find((k) => k.platformKeyId === finding.subject);
      return record ? (await markKeyRevoked(tx, record.id)) !== undefined : false;
    }
    return false;
  }

  return {
    recordTenantDrift: boundary(async (input: RecordTenantDriftInput): Promise<RecordTenantDriftResult> => {
      const facts = await factsOf(input);
      const result: RecordTenantDriftResult = { findings: [], resolved: 0, fixesApplied: [], platformFixes: [] };
      if (!facts) return result; // the record is gone (never deleted in practice): nothing to compare
      const found = compareTenant(facts);
      await withTransaction(pool, async (tx) => {
        const balance = facts.wallet?.balanceMicroUsd;
        if (balance)
          await observeBalance(tx, {
            externalRef: input.externalRef,
            subaccountId: facts.record.subaccountId,
            balanceMicroUsd: balance,
            ...(deps.events?.lowBalanceMicroUsd ? { defaultThresholdMicroUsd: deps.events.lowBalanceMicroUsd } : {}),
          });
        for (const finding of found) {
          const { row, change } = await upsertFinding(tx, input.checkId, finding);
          result.findings.push({ kind: row.kind, subject: row.subject, change });
          if (change !== 'seen') await auditFinding(tx, row, change === 'opened' ? 'drift.opened' : 'drift.reopened');
          if (!finding.fix || options.policies[finding.kind] !== 'fix' || row.fixedAt) continue;
          if (finding.fix === 'revoke_orphan_key') {
            result.platformFixes.push({ findingId: row.id, kind: row.kind, subject: row.subject });
            continue;
          }
          if (!(await applyDatabaseFix(tx, finding, facts.keyRecords))) continue;
          const fixed = await markFindingFixed(tx, row.id, finding.fix);
          if (!fixed) continue;
          await emitFindingEvent(tx, fixed);
          await appendAudit(tx, {
            ...auditOrigin(),
            action: 'drift.fixed',
            externalRef: row.externalRef,
            subject: row.subject,
            details: { findingId: row.id, kind: row.kind, fix: finding.fix, evidence: row.evidence },
          });
          result.fixesApplied.push({ kind: row.kind, subject: row.subject, fix: finding.fix });
        }
        for (const row of await resolveUnseenOfTenant(tx, input.externalRef, input.checkId)) {
          await auditFinding(tx, row, 'drift.resolved');
          result.resolved += 1;
        }
      });
      return result;
    }),
  };
}
