import { observeBalance } from '../../src/db/wallet-alerts-store.js';
import type pg from 'pg';
import { emitFindingEvent } from './finding-events.js';
import { appendAudit } from '../../src/db/audit-store.js';
import { getDriftCheck, listScheduleSnapshotFor, listSnapshotFor } from '../../src/db/drift-checks-store.js';
import {
  markFindingFixed,
  resolveUnseenOfTenant,
  upsertFinding,
  type DriftFindingRow,
} from '../../src/db/drift-findings-store.js';
import { withTransaction, type Queryable } from '../../src/db/pool.js';
import { listKeyRecords, markClosedTenantKeys, markKeyRevoked, recordLostKey } from '../../src/db/tenant-keys-store.js';
import {
  findTenant,
  markTenantClosed,
  recordSubaccount,
  releaseMoneyHold,
  transitionTenant,
} from '../../src/db/tenants-store.js';
import type { TenantStatus } from '../../src/domain/tenant-rules.js';
import {
  findTransferIntentByKey,
  listTransferIntents,
  updateTransferIntent,
} from '../../src/db/transfer-intents-store.js';
import { recordLostTransfer } from '../restored-records.js';
import { completedOnboarding, topUpsLostByRecords } from '../../src/infra/records-witness.js';
import { ONBOARDING_PURPOSE } from '../../src/domain/onboarding.js';
import { findImport } from '../../src/db/imports-store.js';
import { findFundingPolicy } from '../../src/db/funding-store.js';
import { findPlanVersion, findTenantPlanRef } from '../../src/db/plans-store.js';
import { policyFieldsOf } from '../../src/db/plan-state.js';
import { msOf } from '../../src/domain/durations.js';
import { onboardingWorkflowId, rotationScheduleId, topUpWorkflowId } from '../../src/domain/ids.js';
import { planBodySchema, type PlanBody } from '../../src/domain/plans.js';
import { planSlots } from '../plan.js';
import {
  ENDED_RECORD,
  compareTenant,
  needsLifecycle,
  PLAN_GOVERNED,
  unreadIntents,
  type EndedRotation,
  type Finding,
  type PlanFacts,
  type SeenSchedule,
  type TenantFacts,
} from './compare.js';
import { describeRotationSchedule, endedRunStatus, tenantLifecycle, transferMadeByRun } from './temporal.js';
import type { Client } from '@temporalio/client';
import { listOpenRotations, updateRotation, type RotationState } from '../../src/db/key-rotations-store.js';

/** The fixes that make the record follow the state a completed run of ours left the tenant in. */
const FOLLOWED_STATE: Record<string, TenantStatus> = {
  record_onboarded: 'active',
  record_closed: 'closed',
  record_suspended: 'suspended',
  record_resumed: 'active',
};

/** Plan version bodies a worker keeps (they never change); past this many distinct versions it starts again. */
const PLAN_BODIES_KEPT = 256;
import type { DriftFix } from '../../src/domain/drift-kinds.js';
import { DEFAULT_DRIFT_OPTIONS } from './options.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { boundary } from '../failures.js';
import type { TenantObservation } from './platform.js';

/** How long after its record last changed an ended tenant's runs are still read for transfers the records lost. */
const RECENTLY_ENDED_MS = 7 * 86_400_000;

/**
 * A tenant whose wallet cannot be read may have transfers the records lost when its record says it is live (the close
 * came after the backup), or ended only lately (drift itself just recorded its close or its onboarding's end, as the
 * first check after a restore does); one long closed in our records is not read again on every check.
 */
function mayHaveLostTransfers(record: { status: string; updatedAt?: Date }): boolean {
  if (!ENDED_RECORD.includes(record.status)) return true;
  return record.updatedAt !== undefined && Date.now() - record.updatedAt.getTime() < RECENTLY_ENDED_MS;
}

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

  /**
   * Plan versions are immutable, so a version's body read once serves every tenant on it for the worker's life
   * (a page of tenants on one plan reads it once); a failed read is not kept. Null: no such version (it cannot
   * happen: versions are never removed) or a body the schema refuses: the tenant's plan is then not compared.
   */
  const planBodies = new Map<string, Promise<PlanBody | null>>();
  function planBodyOf(plan: { name: string; version: number }): Promise<PlanBody | null> {
    const key = `${plan.name}@${plan.version}`;
    let body = planBodies.get(key);
    if (!body) {
      if (planBodies.size >= PLAN_BODIES_KEPT) planBodies.clear();
      body = findPlanVersion(pool, plan.name, plan.version).then((row) => {
        if (!row) return null;
        const parsed = planBodySchema.safeParse(row.body);
        return parsed.success ? parsed.data : null;
      });
      planBodies.set(key, body);
      body.catch(() => planBodies.delete(key));
    }
    return body;
  }

  /**
   * What the plan the record names declares, against what we have: key records (in factsOf), the policy, and
   * each plan slot's rotation schedule from the check's snapshot (one listing when the check began). A schedule
   * the snapshot shows missing or differing is read once more now before it is reported (the listing is
   * eventually consistent and older than this tenant's page), so Temporal is asked per slot only where it differs.
   */
  async function planFactsOf(
    record: { externalRef: string; status: string },
    check: { id: string; schedulesKnown: boolean },
  ): Promise<PlanFacts | undefined> {
    if (!PLAN_GOVERNED.includes(record.status)) return undefined;
    const ref = await findTenantPlanRef(pool, record.externalRef);
    if (!ref) return undefined;
    const body = await planBodyOf(ref);
    if (!body) return undefined;
    const slots = planSlots({ ...ref, body });
    const policy = await findFundingPolicy(pool, record.externalRef);
    const rotation = body.rotation ? { interval: body.rotation.interval, everyMs: msOf(body.rotation.interval) } : null;
    let schedules: PlanFacts['schedules'] = null;
    if (rotation && check.schedulesKnown && options.temporal) {
      const ids = slots.map((slot) => rotationScheduleId(record.externalRef, slot));
      const listed = new Map(
        (await listScheduleSnapshotFor(pool, check.id, ids)).map((row) => [row.scheduleId, row] as const),
      );
      schedules = {};
      for (const [i, slot] of slots.entries()) {
        let seen: SeenSchedule | null = listed.get(ids[i]!) ?? null;
        if (!seen || seen.paused || seen.everyMs !== rotation.everyMs)
          seen = await describeRotationSchedule(options.temporal, ids[i]!);
        schedules[slot] = seen;
      }
    }
    return {
      ...ref,
      slots,
      autoTopUp: body.autoTopUp
        ? {
            below: body.autoTopUp.below,
            to: body.autoTopUp.to,
            maxPerDay: body.autoTopUp.maxPerDay,
            maxPerMonth: body.autoTopUp.maxPerMonth ?? null,
          }
        : null,
      rotation,
      policy: policy ? policyFieldsOf(policy) : null,
      schedules,
    };
  }

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
    const plan = await planFactsOf(record, check);
    const endedRotations = options.temporal ? await endedRotationsOf(options.temporal, record.externalRef) : [];
    const observed = input.observation && !input.observation.gone ? input.observation : undefined;
    return {
      record: {
        externalRef: record.externalRef,
        subaccountId: record.subaccountId,
        status: record.status,
        updatedAt: record.updatedAt,
      },
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
        purpose: t.purpose,
      })),
      ...(imported ? { importedTransfers: { keys: imported.knownTransferKeys, ids: imported.knownTransferIds } } : {}),
      schedules: check.schedulesKnown ? check.schedules : null,
      ...(plan ? { plan } : {}),
      onboardingProvenIdle: input.onboardingProvenIdle,
      ...(endedRotations.length ? { endedRotations } : {}),
      nowMs: Date.now(),
      quietPeriodMs: input.quietPeriodMs ?? options.quietPeriodMs,
      rotationMaxAgeMs: input.rotationMaxAgeMs ?? options.rotationMaxAgeMs,
    };
  }

  /** Open rotations of our records whose run has ended (a drift check runs on idle tenants only, so rarely any). */
  async function endedRotationsOf(client: Client, externalRef: string): Promise<EndedRotation[]> {
    const ended: EndedRotation[] = [];
    for (const rotation of await listOpenRotations(pool, externalRef)) {
      const runStatus = await endedRunStatus(client, rotation.workflowId, rotation.runId);
      if (runStatus === null) continue;
      const { id, slot, fromGeneration, toGeneration, state, workflowId } = rotation;
      ended.push({ id, slot, fromGeneration, toGeneration, state, workflowId, runStatus });
    }
    return ended;
  }

  /** The run that owns an intent of this purpose: the onboarding's funding, or a top-up of a caller's key. */
  function owningRunOf(externalRef: string, purpose: string): string | null {
    if (purpose === ONBOARDING_PURPOSE) return onboardingWorkflowId(externalRef);
    return purpose.startsWith('top-up:') ? topUpWorkflowId(externalRef, purpose.slice('top-up:'.length)) : null;
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
    const follow = FOLLOWED_STATE[finding.fix ?? ''];
    if (follow) {
      // The state our own completed run left the tenant in (the evidence), from the state the record still holds.
      const { record, becomes } = finding.evidence as {
        record: { status: TenantStatus; subaccountId: string | null };
        becomes?: TenantStatus;
      };
      const to = becomes ?? follow;
      const moved = await transitionTenant(tx, finding.externalRef!, [record.status], to, `drift: ${finding.fix}`);
      if (moved && to === 'closed') {
        await markTenantClosed(tx, finding.externalRef!, null);
        // Our close revoked every key before it completed: the key records follow it too.
        await markClosedTenantKeys(tx, finding.externalRef!);
      }
      // The sub-account its completed onboarding made, where the record lost it too.
      if (moved && !record.subaccountId && finding.subaccountId)
        await recordSubaccount(tx, finding.externalRef!, finding.subaccountId);
      return moved;
    }
    if (finding.fix === 'settle_transfer') {
      // The wallet lists a transfer under this very key: it was made. Only from an open state (a run may settle it
      // first, the same way).
      const intent = await findTransferIntentByKey(tx, finding.subject);
      if (!intent) return false;
      const evidence = finding.evidence as { platformTransferId?: string | null; runShows?: string };
      const settled = await updateTransferIntent(tx, intent.id, ['pending', 'unknown', 'needs_operator'], {
        state: 'succeeded',
        platformTransferId: evidence.platformTransferId ?? null,
        resolution: evidence.runShows ? 'drift:run-result' : 'drift:wallet-transfer-list',
      });
      return settled !== undefined;
    }
    if (finding.fix === 'adopt_transfer') {
      const { transfer } = finding.evidence as {
        transfer: { id: string | null; idempotencyKey: string; amountMicroUsd: string; createdAt?: string };
      };
      const recorded = await recordLostTransfer(tx, finding.externalRef!, transfer);
      return recorded !== undefined;
    }
    if (finding.fix === 'adopt_key') {
      const { key, slot, generation } = finding.evidence as {
        key: { id: string; name: string };
        slot: string;
        generation: number;
      };
      const recorded = await recordLostKey(tx, {
        externalRef: finding.externalRef!,
        slot,
        generation,
        keyName: key.name,
        platformKeyId: key.id,
      });
      return recorded !== undefined;
    }
    if (finding.fix === 'record_rotation_end') {
      // Only from an open state: a run that resumes the rotation first settles it its own way.
      const { rotation, becomes } = finding.evidence as { rotation: EndedRotation; becomes: RotationState };
      const ended = await updateRotation(tx, rotation.id, {
        state: becomes,
        outcome: { recordedBy: 'drift: the records lost its end', runStatus: rotation.runStatus },
      });
      return ended !== undefined;
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
      let found = compareTenant(facts);
      // Only a record whose state disagrees with the platform's costs a visibility read: what our runs did since.
      if (options.temporal && needsLifecycle(facts, found)) {
        facts.lifecycle = await tenantLifecycle(options.temporal, input.externalRef);
        found = compareTenant(facts);
      }
      // An open intent with no wallet to read (closed since): what the run that owned it reports, if it completed.
      const unread = options.temporal ? unreadIntents(facts) : [];
      if (unread.length) {
        const madeByRun: Record<string, string> = {};
        for (const intent of unread) {
          const workflowId = owningRunOf(input.externalRef, intent.purpose);
          const transferId = workflowId ? await transferMadeByRun(options.temporal!, workflowId) : null;
          if (transferId) madeByRun[intent.idempotencyKey] = transferId;
        }
        facts.madeByRun = madeByRun;
        found = compareTenant(facts);
      }
      // A record that says live over a wallet that cannot be read (a close the records lost): what its top-ups made.
      if (options.temporal && !facts.wallet && facts.record.subaccountId && mayHaveLostTransfers(facts.record)) {
        facts.lostByRuns = await topUpsLostByRecords(pool, options.temporal, input.externalRef);
        // The onboarding's funding too, when no intent of it survived.
        if (!facts.transfers.some((t) => t.purpose === ONBOARDING_PURPOSE)) {
          const onboarding = await completedOnboarding(options.temporal, input.externalRef);
          const funding = onboarding?.funding;
          if (onboarding && funding && funding !== 'amount not shown')
            facts.lostByRuns.push({ ...funding, workflowId: onboarding.onboardedBy });
        }
        if (facts.lostByRuns.length) found = compareTenant(facts);
      }
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
        // A restore's hold on the tenant's new money ends with the check that recorded what the restore lost.
        await releaseMoneyHold(tx, input.externalRef, input.checkId, auditOrigin());
      });
      return result;
    }),
  };
}
