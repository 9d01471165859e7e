import type { LastUse } from '../../src/platform/index.js';
import {
  FIX_OF_KIND,
  OUR_KEY_NAME,
  OUR_TRANSFER_KEY,
  slotGenerationOfKeyName,
  type DriftFix,
  type DriftKind,
} from '../../src/domain/drift-kinds.js';
import { fleetScheduleId, rotationScheduleId } from '../../src/domain/ids.js';
import { ROTATION_END_STATE } from '../../src/infra/records-witness.js';

/**
 * The comparison itself: one tenant's records against what the platform showed, as a list of
 * findings. Pure (no I/O, the clock is an input), so every rule is visible in one place.
 */
export interface PlatformSubaccount {
  id: string;
  externalRef: string | null;
  /** Normalised: operating | suspended | closed | unknown. */
  status: string;
}
export interface PlatformKey {
  id: string;
  name: string | null;
  status: string;
  createdAt: string | null;
  lastUsedAt: string | null;
  lastUseKnown: boolean;
  /** The explicit reading (seen / never / unknown), kept in the finding's evidence for the fix's re-check. */
  lastUse?: LastUse;
}
export interface PlatformWallet {
  balanceMicroUsd: string | null;
  transfers: Array<{ id: string | null; idempotencyKey: string | null; amountMicroUsd: string | null }> | null;
}
export interface TenantFacts {
  /** `updatedAt`: when the record last changed (absent: not read). */
  record: { externalRef: string; subaccountId: string | null; status: string; updatedAt?: Date };
  /** Snapshot rows carrying the tenant's external ref, or its recorded sub-account id. */
  subaccounts: PlatformSubaccount[];
  /** Undefined: not observed (the sub-account is not live on the platform). */
  keys?: PlatformKey[];
  wallet?: PlatformWallet;
  projectCount?: number | null;
  keyRecords: Array<{
    id: string;
    platformKeyId: string | null;
    status: string;
    slot: string;
    generation: number;
    activatedAt: string | null;
  }>;
  transfers: Array<{ idempotencyKey: string; state: string; amountMicroUsd: string; purpose?: string }>;
  /**
   * For open intents whose wallet could not be read: the platform transfer id the run that owned each reports, by
   * idempotency key (Temporal: the run's result). Read only then.
   */
  madeByRun?: Record<string, string>;
  /**
   * For a tenant whose wallet could not be read and whose record says it is not closed (the records went back in
   * time): what its completed top-up runs made that no intent records (Temporal). Read only then.
   */
  lostByRuns?: Array<{ workflowId: string; transferId: string | null; amountMicroUsd: string; idempotencyKey: string }>;
  /** An imported tenant: the wallet's transfers at import (made before us, explained by the opening balance). */
  importedTransfers?: { keys: string[]; ids: string[] };
  /** Rotation schedule ids in effect; null when they could not be read (the age check is then off). */
  schedules: string[] | null;
  /** The plan version the record says the tenant is on, with what we have of it; absent: on no plan. */
  plan?: PlanFacts;
  /** True only when Temporal visibility proved no onboarding of this tenant runs. */
  onboardingProvenIdle: boolean;
  /**
   * What the tenant's completed runs did (Temporal visibility), read only when the record's state disagrees with the
   * platform's; absent: not read (no visibility), and the state findings stay report only.
   */
  lifecycle?: { onboarded: boolean; subaccountId?: string | null; last: 'active' | 'suspended' | 'closed' | null };
  /**
   * Rotations our records hold open whose run Temporal shows ended (read only with visibility): `runStatus` is how it
   * ended (COMPLETED, FAILED, CANCELED, TIMED_OUT, TERMINATED, or NOT_FOUND).
   */
  endedRotations?: EndedRotation[];
  nowMs: number;
  quietPeriodMs: number;
  rotationMaxAgeMs: number;
}

/** An open rotation of our records whose run has ended. */
export interface EndedRotation {
  id: string;
  slot: string;
  fromGeneration: number;
  toGeneration: number;
  state: string;
  workflowId: string;
  runStatus: string;
}

/** An auto top-up policy, as a plan declares it and as our records hold it (whole micro-USD as strings). */
export interface PlanPolicy {
  below: string;
  to: string;
  maxPerDay: string;
  maxPerMonth: string | null;
}
/** A plan slot's rotation schedule as seen (listed when the check began, confirmed by a read where it differed). */
export interface SeenSchedule {
  scheduleId: string;
  paused: boolean;
  everyMs: number | null;
}
export interface PlanFacts {
  name: string;
  version: number;
  /** The slots a tenant on the plan has keys in (onboarding's `default` and each of the plan's). */
  slots: string[];
  /** The plan's auto top-up policy; null: the plan says nothing about one. */
  autoTopUp: PlanPolicy | null;
  /** The plan's rotation interval; null: the plan has no rotation. */
  rotation: { interval: string; everyMs: number } | null;
  /** The tenant's policy in our records; null: none. */
  policy: PlanPolicy | null;
  /** Each plan slot's schedule (null: none); null as a whole when schedules could not be read (no Temporal). */
  schedules: Record<string, SeenSchedule | null> | null;
}

export interface Finding {
  kind: DriftKind;
  subject: string;
  externalRef: string | null;
  subaccountId: string | null;
  evidence: Record<string, unknown>;
  /** The kind's fix, when its evidence allows it (applied only where the policy says fix). */
  fix: DriftFix | null;
  fixBlockedBecause?: string;
}

const LIVE_RECORD = ['created', 'active', 'suspended'];
/** Record states of a tenant that ended in our records. */
export const ENDED_RECORD: readonly string[] = ['closed', 'cancelled', 'failed'];
const PENDING_RECORD = ['creating', 'failed', 'cancelled'];
const OPEN_INTENT = ['pending', 'unknown', 'needs_operator'];
const ONBOARDING_RECORD = ['creating', 'created'];
/** A key record of a create that never came back: what a restore leaves of a key made after the backup. */
const UNFINISHED_CREATE = ['creating', 'failed'];
/** Whether the comparison needs what the tenant's completed runs did (TenantFacts.lifecycle) to be complete. */
/** Open intents of a tenant whose wallet was not read (closed since), whose owning run's result may settle them. */
export function unreadIntents(facts: TenantFacts): Array<{ idempotencyKey: string; purpose: string }> {
  if (facts.wallet) return [];
  return facts.transfers
    .filter((t) => OPEN_INTENT.includes(t.state) && t.purpose !== undefined)
    .map((t) => ({ idempotencyKey: t.idempotencyKey, purpose: t.purpose! }));
}

export function needsLifecycle(facts: TenantFacts, found: Finding[]): boolean {
  return (
    found.some((f) => LIFECYCLE_KINDS.includes(f.kind)) ||
    // Under way in the records: with a sub-account, or idle (no run) with none (the records may have lost its end).
    (ONBOARDING_RECORD.includes(facts.record.status) &&
      (facts.record.subaccountId !== null || facts.onboardingProvenIdle))
  );
}

/** The kinds whose fix needs what the tenant's completed runs did (TenantFacts.lifecycle). */
export const LIFECYCLE_KINDS: readonly DriftKind[] = [
  'subaccount_gone',
  'subaccount_suspended',
  'subaccount_not_suspended',
  'onboarding_unrecorded',
];

export function compareTenant(facts: TenantFacts): Finding[] {
  return [
    ...compareSubaccounts(facts),
    ...compareKeys(facts),
    ...compareMoney(facts),
    ...compareKeyAges(facts),
    ...comparePlan(facts),
    ...compareRotations(facts),
  ];
}

/** Open rotations in our records whose run ended: the records lost its end (a restore) and follow how it ended. */
function compareRotations(facts: TenantFacts): Finding[] {
  return (facts.endedRotations ?? []).map((rotation) => {
    const becomes = ROTATION_END_STATE[rotation.runStatus];
    return finding(
      facts,
      'rotation_unrecorded',
      rotation.workflowId,
      facts.record.subaccountId,
      { rotation, ...(becomes ? { becomes } : {}) },
      becomes ? true : `its run ended ${rotation.runStatus}: the next rotation of the slot resumes it`,
    );
  });
}

function finding(
  facts: TenantFacts,
  kind: DriftKind,
  subject: string,
  subaccountId: string | null,
  evidence: Record<string, unknown>,
  fixable: true | string = 'not fixable',
): Finding {
  const fix = fixable === true ? (FIX_OF_KIND[kind] ?? null) : null;
  return {
    kind,
    subject,
    externalRef: facts.record.externalRef,
    subaccountId,
    evidence,
    fix,
    ...(fixable === true || !FIX_OF_KIND[kind] ? {} : { fixBlockedBecause: fixable }),
  };
}

function compareSubaccounts(facts: TenantFacts): Finding[] {
  const { record } = facts;
  const out: Finding[] = [];
  const ours = record.subaccountId ? facts.subaccounts.find((s) => s.id === record.subaccountId) : undefined;
  const strays = facts.subaccounts.filter((s) => s.id !== record.subaccountId && s.externalRef === record.externalRef);
  const recordView = { status: record.status, subaccountId: record.subaccountId };
  if (!record.subaccountId) {
    // An onboarding our records still call under way, with no sub-account: Temporal shows it completed and our close
    // of it completed too, and the platform no longer lists it (restored from a backup taken before both).
    const made = facts.lifecycle?.onboarded ? facts.lifecycle.subaccountId : null;
    if (
      made &&
      strays.length === 0 &&
      ONBOARDING_RECORD.includes(record.status) &&
      facts.lifecycle?.last === 'closed' &&
      !facts.subaccounts.some((x) => x.id === made && x.status !== 'closed')
    ) {
      out.push(
        finding(
          facts,
          'onboarding_unrecorded',
          made,
          made,
          {
            record: recordView,
            platform: 'not listed (closed or gone)',
            lifecycle: facts.lifecycle,
            becomes: 'closed',
          },
          true,
        ),
      );
    }
    for (const stray of strays) {
      const fixable = !PENDING_RECORD.includes(record.status)
        ? `the record is ${record.status}`
        : strays.length > 1
          ? `${strays.length} sub-accounts carry the external ref`
          : !facts.onboardingProvenIdle
            ? 'no Temporal visibility to prove no onboarding runs'
            : true;
      out.push(
        finding(
          facts,
          'subaccount_unrecorded',
          stray.id,
          stray.id,
          { platform: stray, record: recordView, sameRef: strays.length },
          fixable,
        ),
      );
    }
  } else {
    for (const stray of strays)
      out.push(
        finding(facts, 'subaccount_mismatch', stray.id, stray.id, {
          platform: stray,
          record: recordView,
          reason: 'another sub-account carries this external ref',
        }),
      );
    if (ours && ours.externalRef !== null && ours.externalRef !== record.externalRef) {
      out.push(
        finding(facts, 'subaccount_mismatch', ours.id, ours.id, {
          platform: ours,
          record: recordView,
          reason: 'our sub-account carries another external ref',
        }),
      );
    }
    const live = ours !== undefined && ours.status !== 'closed';
    // A state our own completed run left the tenant in, that the records lost (restored from a backup): followed.
    const ranTo = (state: 'active' | 'suspended' | 'closed'): true | string =>
      !facts.lifecycle
        ? 'no Temporal visibility to show which run of ours moved it'
        : facts.lifecycle.last === state
          ? true
          : `our last completed lifecycle run left it ${facts.lifecycle.last ?? 'as onboarded'}, not ${state}`;
    const lifecycle = facts.lifecycle ?? null;
    // A close begun in the records whose run ended (else the tenant is busy, and not compared) counts as live here.
    if ((LIVE_RECORD.includes(record.status) || record.status === 'closing') && !live) {
      out.push(
        finding(
          facts,
          'subaccount_gone',
          record.subaccountId,
          record.subaccountId,
          { record: recordView, platform: 'not listed (closed or gone)', lifecycle },
          ranTo('closed'),
        ),
      );
    } else if (ours && record.status === 'active' && ours.status === 'suspended') {
      out.push(
        finding(
          facts,
          'subaccount_suspended',
          ours.id,
          ours.id,
          { record: recordView, platform: ours, lifecycle },
          ranTo('suspended'),
        ),
      );
    } else if (ours && record.status === 'suspended' && ours.status === 'operating') {
      out.push(
        finding(
          facts,
          'subaccount_not_suspended',
          ours.id,
          ours.id,
          { record: recordView, platform: ours, lifecycle },
          ranTo('active'),
        ),
      );
    } else if (ours && live && ONBOARDING_RECORD.includes(record.status) && facts.lifecycle?.onboarded) {
      // Only with the proof: a record left at created by an onboarding that did not complete is the run's to tell.
      const fixable = true;
      out.push(
        finding(
          facts,
          'onboarding_unrecorded',
          ours.id,
          ours.id,
          {
            record: recordView,
            platform: ours,
            lifecycle,
            becomes: ours.status === 'suspended' ? 'suspended' : 'active',
          },
          fixable,
        ),
      );
    } else if (ours && live && ENDED_RECORD.includes(record.status)) {
      out.push(
        finding(facts, 'subaccount_not_closed', ours.id, ours.id, {
          record: recordView,
          platform: ours,
          projectCount: facts.projectCount ?? null,
        }),
      );
    }
  }
  return out;
}

function quietForMs(key: PlatformKey, nowMs: number): number | null {
  if (!key.lastUseKnown) return null;
  const since = key.lastUsedAt ?? key.createdAt;
  return since ? nowMs - Date.parse(since) : null;
}

function compareKeys(facts: TenantFacts): Finding[] {
  if (!facts.keys) return facts.record.status === 'closed' ? closedTenantKeys(facts) : [];
  const subaccountId = facts.record.subaccountId;
  const out: Finding[] = [];
  const byId = new Map(facts.keys.map((k) => [k.id, k]));
  const recorded = new Map(facts.keyRecords.filter((r) => r.platformKeyId).map((r) => [r.platformKeyId!, r]));
  const liveRecordedSlots = new Set(
    facts.keys
      .filter((k) => k.status === 'active' && SLOT_HOLDING.includes(recorded.get(k.id)?.status ?? ''))
      .map((k) => recorded.get(k.id)!.slot),
  );
  for (const key of facts.keys) {
    const record = recorded.get(key.id);
    const named = slotGenerationOfKeyName(key.name);
    // The slot's only live key: revoking it would leave the tenant none, whatever its records say.
    const onlyLive = named !== null && !liveRecordedSlots.has(named.slot);
    if (
      !record &&
      key.status === 'active' &&
      named &&
      onlyLive &&
      !facts.keyRecords.some(
        (r) => r.slot === named.slot && r.generation === named.generation && !UNFINISHED_CREATE.includes(r.status),
      )
    ) {
      // Our create of a generation no record holds (or holds only as a create no run will finish: drift checks idle
      // tenants only), and the slot has no other live key: the records went back in time (a create claims its
      // generation's record before it calls the platform) and this is the key in use.
      // Adopted so an adoption rotation replaces it through the quiet gate; never revoked as an orphan.
      // Without visibility a key issue in flight looks the same (its record creating, its key made): report only.
      const fixable = facts.onboardingProvenIdle ? true : 'no Temporal visibility to prove no run is creating it';
      out.push(finding(facts, 'key_unrecorded', key.id, subaccountId, { key, ...named }, fixable));
    } else if (!record && key.status === 'active') {
      const ours = key.name !== null && OUR_KEY_NAME.test(key.name);
      const quietMs = quietForMs(key, facts.nowMs);
      const fixable = !ours
        ? 'the key is not named by our scheme'
        : onlyLive
          ? 'it is the only live key of its slot: revoking it would leave the tenant none'
          : quietMs === null
            ? 'the platform shows no last use for it'
            : quietMs < facts.quietPeriodMs
              ? `used ${Math.round(quietMs / 1000)}s ago, quiet period ${Math.round(facts.quietPeriodMs / 1000)}s`
              : true;
      out.push(
        finding(facts, 'key_orphan', key.id, subaccountId, { key, namedByUs: ours, quietForMs: quietMs }, fixable),
      );
    } else if (record?.status === 'unmanaged' && key.status === 'active') {
      out.push(
        finding(facts, 'key_unmanaged', key.id, subaccountId, {
          key,
          record: { slot: record.slot, generation: record.generation },
          quietForMs: quietForMs(key, facts.nowMs),
        }),
      );
    } else if (record?.status === 'revoked' && key.status === 'active') {
      out.push(finding(facts, 'key_active_but_revoked', key.id, subaccountId, { key, record }));
    }
  }
  for (const [keyId, record] of recorded) {
    if (record.status !== 'active' && record.status !== 'unmanaged') continue;
    const key = byId.get(keyId);
    if (!key)
      out.push(finding(facts, 'key_missing_on_platform', keyId, subaccountId, { record, platform: 'not listed' }));
    else if (key.status === 'revoked')
      out.push(finding(facts, 'key_revoked_on_platform', keyId, subaccountId, { record, key }, true));
  }
  return out;
}

/**
 * A closed tenant's key records that still say live (a restore took the close's revokes, or a key the close did not
 * know of): the sub-account is closed, so no key of it works; recorded revoked.
 */
function closedTenantKeys(facts: TenantFacts): Finding[] {
  return facts.keyRecords
    .filter((r) => r.platformKeyId && (r.status === 'active' || r.status === 'unmanaged'))
    .map((record) =>
      finding(
        facts,
        'key_revoked_on_platform',
        record.platformKeyId!,
        facts.record.subaccountId,
        { record, platform: 'the sub-account is closed: none of its keys works' },
        true,
      ),
    );
}

function compareMoney(facts: TenantFacts): Finding[] {
  const out: Finding[] = [];
  const platformKeys = new Set(
    (facts.wallet?.transfers ?? []).map((t) => t.idempotencyKey).filter((k): k is string => k !== null),
  );
  const listed = new Map(
    (facts.wallet?.transfers ?? []).filter((t) => t.idempotencyKey !== null).map((t) => [t.idempotencyKey!, t]),
  );
  for (const intent of facts.transfers.filter((t) => OPEN_INTENT.includes(t.state))) {
    const platformShows = facts.wallet?.transfers
      ? platformKeys.has(intent.idempotencyKey)
        ? 'applied'
        : 'not in recent transfers'
      : 'not shown';
    // The wallet cannot be read (the tenant was closed since): the run that owned the intent says it made it.
    const byRun = platformShows === 'not shown' ? facts.madeByRun?.[intent.idempotencyKey] : undefined;
    // A pending intent is a run's business until the wallet (or its own completed run) shows it made.
    if (intent.state === 'pending' && platformShows !== 'applied' && !byRun) continue;
    const made = listed.get(intent.idempotencyKey);
    const fixable = byRun
      ? true
      : !made || platformShows !== 'applied'
        ? 'the wallet does not list a transfer under its key'
        : made.amountMicroUsd !== intent.amountMicroUsd
          ? `the wallet lists ${made.amountMicroUsd ?? 'no amount'} under its key, the intent ${intent.amountMicroUsd}`
          : true;
    out.push(
      finding(
        facts,
        'transfer_unknown',
        intent.idempotencyKey,
        facts.record.subaccountId,
        {
          intent,
          platformShows,
          ...(made ? { platformTransferId: made.id } : {}),
          ...(byRun ? { platformTransferId: byRun, runShows: 'made by the run that owned it (completed)' } : {}),
        },
        fixable,
      ),
    );
  }
  // A wallet that cannot be read (closed since a restore of the records): the transfers Temporal shows its completed
  // top-up runs made and the records lost, recorded as made from the runs' results (never sent again).
  for (const lost of facts.lostByRuns ?? []) {
    const transfer = { id: lost.transferId, idempotencyKey: lost.idempotencyKey, amountMicroUsd: lost.amountMicroUsd };
    out.push(
      finding(
        facts,
        'transfer_unrecorded',
        lost.idempotencyKey,
        facts.record.subaccountId,
        { transfer, runShows: `made by ${lost.workflowId} (completed); the wallet cannot be read` },
        true,
      ),
    );
  }
  const balance = facts.wallet?.balanceMicroUsd;
  if (!facts.wallet || balance === null || balance === undefined || !facts.record.subaccountId) return out;
  // Tenants spend money, so a balance BELOW what we put in is normal; money in that we did not put
  // in (a balance above it, or a transfer under a key that is not ours) is what we report.
  const ourKeys = new Set([...facts.transfers.map((t) => t.idempotencyKey), ...(facts.importedTransfers?.keys ?? [])]);
  const importedIds = new Set(facts.importedTransfers?.ids ?? []);
  const notRecorded = (facts.wallet.transfers ?? []).filter(
    (t) => (t.idempotencyKey === null || !ourKeys.has(t.idempotencyKey)) && !(t.id !== null && importedIds.has(t.id)),
  );
  // Made under our key, lost by the records: reported (and adopted) one by one, and so explained here.
  const lost = notRecorded.filter((t) => t.idempotencyKey !== null && OUR_TRANSFER_KEY.test(t.idempotencyKey));
  for (const t of lost) {
    const fixable = t.amountMicroUsd === null ? 'the wallet shows no amount for it' : true;
    out.push(
      finding(facts, 'transfer_unrecorded', t.idempotencyKey!, facts.record.subaccountId, { transfer: t }, fixable),
    );
  }
  const unrecorded = notRecorded.filter((t) => !lost.includes(t));
  const recordedIn = [
    ...facts.transfers.filter((t) => t.state === 'succeeded').map((t) => t.amountMicroUsd),
    ...lost.map((t) => t.amountMicroUsd ?? '0'),
    // A pending or unknown intent the wallet lists as made is money in (reported as transfer_unknown).
    ...facts.transfers
      .filter((t) => t.state !== 'succeeded' && listed.has(t.idempotencyKey))
      .map((t) => t.amountMicroUsd),
  ].reduce((sum, amount) => sum + BigInt(amount), 0n);
  const excess = BigInt(balance) - recordedIn;
  if (excess > 0n || unrecorded.length > 0) {
    out.push(
      finding(facts, 'balance_unexplained', facts.record.subaccountId, facts.record.subaccountId, {
        balanceMicroUsd: balance,
        recordedInMicroUsd: recordedIn.toString(),
        excessMicroUsd: excess > 0n ? excess.toString() : '0',
        unrecordedTransfers: unrecorded.slice(0, 20),
      }),
    );
  }
  return out;
}

function compareKeyAges(facts: TenantFacts): Finding[] {
  if (!facts.schedules || facts.record.status !== 'active') return [];
  const schedules = new Set(facts.schedules);
  return facts.keyRecords
    .filter(
      (r) =>
        r.status === 'active' &&
        r.platformKeyId &&
        r.activatedAt &&
        facts.nowMs - Date.parse(r.activatedAt) > facts.rotationMaxAgeMs,
    )
    .filter(
      (r) =>
        !schedules.has(rotationScheduleId(facts.record.externalRef, r.slot)) && !schedules.has(fleetScheduleId(r.slot)),
    )
    .map((r) =>
      finding(facts, 'key_rotation_overdue', r.platformKeyId!, facts.record.subaccountId, {
        slot: r.slot,
        generation: r.generation,
        activatedAt: r.activatedAt,
        ageMs: facts.nowMs - Date.parse(r.activatedAt!),
        rotationMaxAgeMs: facts.rotationMaxAgeMs,
        schedulesLookedFor: [rotationScheduleId(facts.record.externalRef, r.slot), fleetScheduleId(r.slot)],
      }),
    );
}

/** Tenants a plan still governs: keys, policy and schedules are kept for them (a closing one is being torn down). */
export const PLAN_GOVERNED = ['active', 'suspended'];
/** Key records that hold a slot: ours, or one known from an import (reported as key_unmanaged itself). */
const SLOT_HOLDING = ['active', 'unmanaged'];

/** What the finding says to do: drift never converges a tenant to its plan, a rollout or an assignment does. */
export function planAdvice(plan: { name: string; version: number }): string {
  return (
    `report only: drift does not change a tenant to match its plan. Converge it with \`tenantctl plans rollout ` +
    `${plan.name}\` (every tenant on the plan to its latest version) or \`tenantctl plans assign <ref> ` +
    `${plan.name}@${plan.version}\` (this tenant to that version)`
  );
}

function samePolicy(a: PlanPolicy, b: PlanPolicy): boolean {
  const same = (x: string | null, y: string | null) => (x === null || y === null ? x === y : BigInt(x) === BigInt(y));
  return (
    same(a.below, b.below) && same(a.to, b.to) && same(a.maxPerDay, b.maxPerDay) && same(a.maxPerMonth, b.maxPerMonth)
  );
}

/**
 * A tenant that differs from the plan version its record names: a slot without a key, a policy that is not the
 * plan's, a slot's rotation schedule missing or at another interval. Report only (no fix of its kind exists): the
 * plan's rollout or assignment is what converges a tenant, so each finding's evidence carries that advice.
 */
function comparePlan(facts: TenantFacts): Finding[] {
  const plan = facts.plan;
  if (!plan || !PLAN_GOVERNED.includes(facts.record.status)) return [];
  const { externalRef, subaccountId } = facts.record;
  const ref = { name: plan.name, version: plan.version };
  const advice = planAdvice(ref);
  const out: Finding[] = [];
  for (const slot of plan.slots) {
    const held = facts.keyRecords.filter((k) => k.slot === slot && SLOT_HOLDING.includes(k.status));
    if (held.length === 0)
      out.push(
        finding(facts, 'plan_slot_missing', `${externalRef}:${slot}`, subaccountId, {
          plan: ref,
          slot,
          record: 'no active key in this slot',
          advice,
        }),
      );
  }
  if (plan.autoTopUp && (!plan.policy || !samePolicy(plan.policy, plan.autoTopUp)))
    out.push(
      finding(facts, 'plan_policy_differs', externalRef, subaccountId, {
        plan: ref,
        planPolicy: plan.autoTopUp,
        record: plan.policy ?? 'no auto top-up policy',
        advice,
      }),
    );
  if (plan.rotation && plan.schedules) {
    for (const slot of plan.slots) {
      const seen = plan.schedules[slot] ?? null;
      const why = !seen
        ? 'no rotation schedule'
        : seen.paused
          ? 'the schedule is paused'
          : seen.everyMs !== plan.rotation.everyMs
            ? 'the schedule rotates at another interval'
            : null;
      if (why)
        out.push(
          finding(facts, 'plan_schedule_differs', rotationScheduleId(externalRef, slot), subaccountId, {
            plan: ref,
            slot,
            planInterval: plan.rotation.interval,
            planEveryMs: plan.rotation.everyMs,
            schedule: seen ? { paused: seen.paused, everyMs: seen.everyMs } : 'none',
            reason: why,
            advice,
          }),
        );
    }
  }
  return out;
}

/** A sub-account whose external ref no record carries at all. */
export function unownedSubaccountFinding(subaccount: PlatformSubaccount): Finding {
  return {
    kind: 'subaccount_unrecorded',
    subject: subaccount.id,
    externalRef: subaccount.externalRef,
    subaccountId: subaccount.id,
    evidence: { platform: subaccount, record: null },
    fix: null,
    fixBlockedBecause: 'no tenant record carries its external ref',
  };
}
