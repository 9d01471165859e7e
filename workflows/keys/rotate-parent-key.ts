/**
 * rotateParentKey — why: the parent's platform key (svpk_) is the most powerful credential we hold; it must change
 * like every other, without a restart and without a call answered 401. Every worker and gateway reads the current
 * key from our records and reports the one it uses (process_credentials), so the old key is revoked only once no
 * process uses it and the platform shows it quiet. One run at a time (id `rotate-parent-key`).
 *
 *   name the old key (its platform id: recorded, or the one active key none of our records holds)
 *   ─► create new key ─► seal ─► verify (read) ─► make current ─► wait: every live process reports the new key
 *     (key_limit: wait for an operator)                            (a process that stops reporting is not waited for;
 *                                                                   past the deadline: held)
 *   ─► verify (read) ─► old key's platform id unknown and several keys could be it: naming_old_key (an operator
 *      names it: `tenantctl parent-key identify`; the parent's other keys are never touched)
 *   ─► quiet gate on the old key (last use, else overlap window; emergency: none) ─► revoke old
 *
 * Every wait follows workflows/waits.ts: the `currentWait` query (stage, what for, since, the decisions that
 * apply), polls backing off to a ceiling, and a continue-as-new carrying the rotation's state past
 * `historyEventBound` or when the SDK suggests it (a decision sent after it lands on the new run).
 *
 * Operator decisions are Updates with validators (same names as tenant rotation): retryKeyCreate, abortRotation,
 * revokeAnyway, escalateToEmergency; a decision that cannot apply is refused with the reason (revokeAnyway while
 * the old key's platform id is unknown, anything after an abort or a revokeAnyway was accepted). Abort or failure
 * before the old key is revoked rolls back: the old key is current again and the new one is revoked.
 */
import {
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { ParentKeyRef } from '../../activities/keys/parent-key.js';
import { codedFailure, FailureCode } from '../../src/domain/failures.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID, platformTaskQueue } from '../../src/domain/ids.js';
import type { RotateParentKeyInput } from '../../src/domain/key-slot-input.js';
import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { databaseStep, platformCall } from '../activity-policies.js';
import { installDecisions } from './decision-table.js';
import {
  parentKeyRecordsChangedSignal,
  parentKeyRotationStatusQuery,
  type ParentKeyRotationStage,
  type ParentKeyRotationStatus,
  type PendingProcess,
} from './rotate-parent-key-messages.js';
import { evaluateGate, type GateMemory } from './quiet-gate.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from './rotate-tenant-key-messages.js';
import { carriedState } from '../transfer-loop.js';
import { msOf, validateWorkflowInput } from '../validate-input.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';
import { waitForKeySlot } from './key-slot-wait.js';

const db = proxyLocalActivities<Activities>(databaseStep);

export interface RotateParentKeyResult {
  outcome: 'completed';
  oldKey: ParentKeyRef;
  newKey: ParentKeyRef;
  emergency: boolean;
  quietCheck: string;
}

const DEFAULTS = {
  pollInterval: '5s',
  staleAfter: '1m',
  switchDeadline: '30m',
  quietPeriod: '2m',
  quietDeadline: '1h',
  overlapWindow: '10m',
} as const;

type ParentKeyDecision = 'retryKeyCreate' | 'abortRotation' | 'revokeAnyway' | 'escalateToEmergency';

/** Where a run stands, so a continuation picks up where the previous run waited. */
type Phase = 'create' | 'switch' | 'name' | 'quiet';

/** What a run continued as new hands to the next (ids, fingerprints, stages, times, decisions: never a token). */
interface Carried {
  begun: { old: ParentKeyRef; newRowId: string; keyName: string };
  phase: Phase;
  status: ParentKeyRotationStatus;
  wait: WaitView | null;
  polls: number;
  switchStartedMs: number | null;
  oldPlatformId: string | null;
  oldGone: boolean;
  memory: GateMemory | null;
  lastWaitMs: number;
  abortBy: DecisionBy | null;
  revokeBy: DecisionBy | null;
}

export async function rotateParentKey(rawInput: RotateParentKeyInput): Promise<RotateParentKeyResult> {
  const input = await validateWorkflowInput('rotateParentKey', rawInput, () => PARENT_KEY_ROTATION_WORKFLOW_ID);
  // Only the run's own continuation sets `continued` (a caller's is refused as invalid input).
  const carried = carriedState<Carried>(input.continued);
  const platform = proxyActivities<Activities>(platformCall(platformTaskQueue(workflowInfo().taskQueue)));
  const o = { ...DEFAULTS, ...input.options };
  const t = {
    pollMs: msOf(o.pollInterval),
    staleMs: msOf(o.staleAfter),
    switchDeadlineMs: msOf(o.switchDeadline),
    quietPeriodMs: msOf(o.quietPeriod),
    quietDeadlineMs: msOf(o.quietDeadline),
    overlapWindowMs: msOf(o.overlapWindow),
  };
  const status: ParentKeyRotationStatus = carried?.status ?? {
    stage: 'creating_key',
    emergency: input.emergency,
    oldKey: null,
    newKey: null,
    processes: { live: 0, stragglers: [], pending: [] },
    switchedAt: null,
    activeKeys: [],
    candidates: [],
    quietCheck: null,
    notes: input.reason ? [`started: ${input.reason}`] : [],
  };
  setHandler(parentKeyRotationStatusQuery, () => status);
  const waits = new Waits({ details: () => detailsOf(status) }, carried?.wait ?? null);
  let recordsChanged = false;
  let abortBy: DecisionBy | null = carried?.abortBy ?? null;
  let revokeBy: DecisionBy | null = carried?.revokeBy ?? null;
  /** retryKeyCreate accepted, and whether an abort was (the key-limit wait reads both). */
  const keySlot = { retry: false, aborted: () => abortBy !== null };
  let oldPlatformId: string | null = carried?.oldPlatformId ?? null;
  setHandler(parentKeyRecordsChangedSignal, () => {
    recordsChanged = true;
  });

  /** A decision after an abort or a revokeAnyway was accepted cannot apply: the run is already on its way. */
  const settled = () => {
    const a = abortBy as DecisionBy | null;
    const r = revokeBy as DecisionBy | null;
    if (a) return `the rotation is being rolled back (abortRotation by ${a.operator}): no other decision applies`;
    if (r) return `revokeAnyway by ${r.operator} was accepted: the old key is being revoked`;
    return null;
  };
  const unknownOldId = () =>
    oldPlatformId
      ? null
      : `the old key's platform id is unknown (imported without --key-id` +
        `${status.candidates?.length ? `, and ${status.candidates.length} active platform keys could be it` : ''}): ` +
        `revokeAnyway cannot revoke it. Find ours with \`tenantctl parent-key platform-keys\`, name it with ` +
        `\`tenantctl parent-key identify <keyId>\`, then decide again`;
  const GATE = ['waiting_for_switch', 'naming_old_key', 'waiting_for_quiet', 'held'] as const;
  /** The decisions that apply now (what a wait lists), the same rule as the validators by construction. */
  const applicableNow = installDecisions<ParentKeyRotationStage, ParentKeyDecision>({
    table: {
      retryKeyCreate: ['key_limit'],
      abortRotation: ['key_limit', ...GATE],
      revokeAnyway: GATE,
      escalateToEmergency: ['creating_key', 'key_limit', 'verifying', ...GATE],
    },
    updates: {
      retryKeyCreate: retryKeyCreateUpdate,
      abortRotation: abortRotationUpdate,
      revokeAnyway: revokeAnywayUpdate,
      escalateToEmergency: escalateToEmergencyUpdate,
    },
    stage: () => status.stage,
    settled: (name) =>
      settled() ?? (name === 'escalateToEmergency' && status.emergency ? 'already an emergency rotation' : null),
    notAt: (name, stages) => `${name} applies at ${stages.join(', ')} (the run is at ${status.stage})`,
    also: (name) => (name === 'revokeAnyway' ? unknownOldId() : null),
    take: (name, by) => {
      switch (name) {
        case 'retryKeyCreate':
          keySlot.retry = true;
          return 'the create is tried again now';
        case 'abortRotation':
          abortBy = by;
          return 'rolling back: the old key is current again, the new one is revoked';
        case 'revokeAnyway':
          revokeBy = by;
          return 'the old key is revoked now';
        case 'escalateToEmergency':
          status.emergency = true;
          status.notes.push(`escalated to emergency by ${by.operator}: ${by.reason}`);
          return 'no quiet gate: the old key is revoked as soon as every live process uses the new one';
      }
    },
  });

  let begun: Carried['begun'];
  if (carried) begun = carried.begun;
  else {
    begun = await db.beginParentKeyRotation({ runKey: workflowInfo().firstExecutionRunId.slice(0, 12) });
    status.oldKey = begun.old;
    // Which platform key the old one is, before anything changes: recorded, or the only one it can be (this
    // listing is made with the old key, so the old key is among the keys it shows).
    const seen = await platform.observeOldParentKey({ old: begun.old, newPlatformKeyId: '', inferSingle: true });
    oldPlatformId = seen.platformKeyId;
    status.candidates = seen.ambiguous;
    if (oldPlatformId) status.oldKey = { ...begun.old, platformKeyId: oldPlatformId };
  }
  let phase: Phase = carried?.phase ?? 'create';
  const backoff = new Backoff(
    t.pollMs,
    input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling),
    carried?.polls ?? 0,
  );
  let switchStartedMs = carried?.switchStartedMs ?? null;
  let oldGone = carried?.oldGone ?? false;
  let memory: GateMemory | null = carried?.memory ?? null;
  let lastWaitMs = carried?.lastWaitMs ?? t.pollMs;
  let oldRevoked = false;
  const aborted = () => abortBy !== null;

  /** Past the bound (or when the SDK suggests it); a run just continued never continues again at once. */
  const runFull = () => workflowInfo().historyLength >= 100 && historyFull(input.options?.historyEventBound);
  /** The next run takes over with this one's state. */
  const continueRun = async (): Promise<never> => {
    await handlersFinished();
    const next: Carried = {
      begun,
      phase,
      status,
      wait: waits.current,
      polls: backoff.polls,
      switchStartedMs,
      oldPlatformId,
      oldGone,
      memory,
      lastWaitMs,
      abortBy,
      revokeBy,
    };
    return continueAsNew<typeof rotateParentKey>({
      ...rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  };
  const continueIfFull = async () => {
    if (runFull()) await continueRun();
  };
  /** Waits `ms` or until `woken`, then throws on an abort. */
  const sleep = async (ms: number, woken: () => boolean) => {
    lastWaitMs = ms;
    await condition(() => aborted() || woken(), ms);
    if (aborted()) throw abortFailure(abortBy);
  };

  try {
    if (phase === 'create') {
      const created = await waitForKeySlot({
        waits,
        backoff,
        decisions: keySlot,
        applicable: applicableNow,
        create: () => {
          status.stage = 'creating_key';
          return platform.createParentKeyOnPlatform({ rowId: begun.newRowId, keyName: begun.keyName });
        },
        atLimit: (limit) => {
          status.stage = 'key_limit';
          status.activeKeys = limit.activeKeys;
          return (
            `the platform's active-key limit (${limit.activeKeys.length} active platform keys: ` +
            `${limit.activeKeys.map((k) => k.name ?? k.id).join(', ')}): the create is tried again by itself; ` +
            `revoke a key nobody uses (never another service's), then decide retryKeyCreate, or abortRotation ` +
            `(tenantctl parent-key decide)`
          );
        },
        afterWait: (waitMs) => {
          lastWaitMs = waitMs;
        },
        full: runFull,
        continueAsNew: continueRun,
      });
      if (created === 'aborted') throw abortFailure(abortBy);
      status.newKey = created.key;
      waits.leave();
      backoff.reset();
      status.stage = 'verifying';
      await platform.verifyParentKey({ rowId: begun.newRowId });
      await db.makeParentKeyCurrent({ rowId: begun.newRowId });
      phase = 'switch';
      switchStartedMs = Date.now();
    }

    if (phase === 'switch') {
      // Every live process reports the new key (or stops reporting, or an operator decides).
      status.stage = 'waiting_for_switch';
      for (;;) {
        const before = status.processes.stragglers.join();
        status.processes = await db.observeParentKeySwitch({ rowId: begun.newRowId, staleAfterMs: t.staleMs });
        if (status.processes.stragglers.length === 0 || revokeBy) break;
        if (status.processes.stragglers.join() !== before) backoff.reset();
        const pastDeadline = Date.now() - (switchStartedMs ?? 0) >= t.switchDeadlineMs;
        status.stage = pastDeadline ? 'held' : 'waiting_for_switch';
        const waitMs = backoff.next();
        waits.enter(
          status.stage,
          `${switchWaitText(status.processes.pending ?? [], status.processes.live, begun.newRowId)}` +
            (pastDeadline
              ? `; past the switch deadline (${o.switchDeadline}): held for an operator`
              : `; a process silent for ${o.staleAfter} is not waited for; held after ${o.switchDeadline}`),
          applicableNow(),
          waitMs,
        );
        await sleep(waitMs, () => revokeBy !== null);
        if (revokeBy) break;
        await continueIfFull();
      }
      if (status.processes.stragglers.length === 0) status.switchedAt = new Date(Date.now()).toISOString();
      waits.leave();
      backoff.reset();
      status.stage = 'verifying';
      await platform.verifyParentKey({ rowId: begun.newRowId });
      phase = 'name';
    }

    if (phase === 'name') {
      // The old key's platform id: recorded, or named by an operator; never guessed among the parent's other keys.
      while (!oldPlatformId && !oldGone) {
        recordsChanged = false;
        const seen = await platform.observeOldParentKey({
          old: begun.old,
          newPlatformKeyId: status.newKey?.platformKeyId ?? '',
        });
        if (seen.platformKeyId) {
          oldPlatformId = seen.platformKeyId;
          break;
        }
        if (seen.ambiguous.length === 0) {
          // No active key could be it: the old key is no longer active on the platform.
          oldGone = true;
          break;
        }
        if ((status.candidates ?? []).join() !== seen.ambiguous.join()) backoff.reset();
        status.candidates = seen.ambiguous;
        status.stage = 'naming_old_key';
        const waitMs = backoff.next();
        status.quietCheck =
          `the old key's platform id is unknown (imported without --key-id) and ${seen.ambiguous.length} ` +
          `active platform keys could be it (${seen.ambiguous.join(', ')})`;
        waits.enter(
          'naming_old_key',
          `an operator to name the old key among the parent's ${seen.ambiguous.length} active platform keys ` +
            `that could be it (${seen.ambiguous.join(', ')}): find ours with \`tenantctl parent-key ` +
            `platform-keys\`, name it with \`tenantctl parent-key identify <keyId>\`; the parent's other keys ` +
            `are never touched`,
          applicableNow(),
          waitMs,
        );
        await sleep(waitMs, () => recordsChanged);
        await continueIfFull();
      }
      if (oldPlatformId) status.oldKey = { ...begun.old, platformKeyId: oldPlatformId };
      status.candidates = [];
      waits.leave();
      backoff.reset();
      phase = 'quiet';
    }

    // The quiet gate on the old key, unless it is gone, an emergency, or an operator says revoke now.
    let observed: Awaited<ReturnType<Activities['observeOldParentKey']>>['usage'] = null;
    status.stage = 'waiting_for_quiet';
    while (!oldGone && !status.emergency && !revokeBy) {
      const seen = await platform.observeOldParentKey({
        old: { ...begun.old, platformKeyId: oldPlatformId },
        newPlatformKeyId: status.newKey?.platformKeyId ?? '',
      });
      memory ??= { deployedAtMs: Date.now(), deployedAtPlatform: null, lastSeen: null, polls: 0 };
      const lastSeenBefore = memory.lastSeen?.value;
      const decision = evaluateGate(memory, seen.usage, null, Date.now(), {
        quietPeriodMs: t.quietPeriodMs,
        propagationAllowanceMs: t.pollMs * 2,
        pollIntervalMs: lastWaitMs,
        quietDeadlineMs: t.quietDeadlineMs,
        overlapWindowMs: t.overlapWindowMs,
      });
      status.quietCheck = decision.view.verdict;
      if (decision.kind === 'gone') break;
      if (decision.kind === 'quiet') {
        observed = decision.observed;
        break;
      }
      if (memory.lastSeen?.value !== lastSeenBefore) backoff.reset();
      status.stage = decision.kind === 'held' ? 'held' : 'waiting_for_quiet';
      const waitMs = backoff.next();
      waits.enter(
        status.stage,
        `the old key (platform id ${oldPlatformId}) to show no use for ${o.quietPeriod}: ${decision.view.verdict}`,
        applicableNow(),
        waitMs,
      );
      await sleep(waitMs, () => revokeBy !== null || status.emergency);
      await continueIfFull();
    }
    waits.leave();

    status.stage = 'revoking';
    if (!oldPlatformId && !oldGone)
      throw codedFailure(FailureCode.NO_ACTIVE_KEY, "the old key's platform id is unknown: it was not revoked");
    const by = revokeBy as DecisionBy | null;
    await platform.revokeOldParentKey({
      rowId: begun.old.rowId,
      platformKeyId: oldPlatformId,
      expect: observed?.lastUse ? { lastUse: observed.lastUse, useCount: observed.useCount ?? null } : null,
      operator: by?.operator ?? null,
      why: oldGone
        ? 'no active platform key could be the old key: already revoked on the platform'
        : by
          ? `revokeAnyway by ${by.operator}: ${by.reason}`
          : status.emergency
            ? 'emergency: no quiet gate'
            : (status.quietCheck ?? 'quiet'),
    });
    oldRevoked = true;
    status.stage = 'completed';
    return {
      outcome: 'completed',
      oldKey: { ...begun.old, platformKeyId: oldPlatformId },
      newKey: status.newKey!,
      emergency: status.emergency,
      quietCheck: status.quietCheck ?? (status.emergency ? 'emergency: no quiet gate' : 'operator decision'),
    };
  } catch (error) {
    if (error instanceof ContinueAsNew) throw error;
    if (!oldRevoked) {
      const by = abortBy as DecisionBy | null;
      waits.leave();
      await CancellationScope.nonCancellable(() =>
        platform.rollBackParentKeyRotation({
          oldRowId: begun.old.rowId,
          newRowId: begun.newRowId,
          keyName: begun.keyName,
          operator: by?.operator ?? null,
          why: by ? `aborted by ${by.operator}: ${by.reason}` : isCancellation(error) ? 'cancelled' : 'failed',
        }),
      );
      status.stage = 'aborted';
    }
    throw error;
  }
}

/** The switch wait names the processes not yet on the new key: identity and last report, never a secret. */
function switchWaitText(pending: PendingProcess[], live: number, newRowId: string): string {
  const named = pending.map((p) => `${p.processId} (${p.kind}, last report ${p.lastReportAt})`).join(', ');
  return `${pending.length} of ${live} live processes to report the new key (record ${newRowId}): ${named}`;
}

function detailsOf(status: ParentKeyRotationStatus): string[] {
  const lines = [
    `old key: record ${status.oldKey?.rowId ?? '-'}, platform id ${status.oldKey?.platformKeyId ?? '(unknown)'}`,
  ];
  if (status.newKey)
    lines.push(`new key: record ${status.newKey.rowId}, platform id ${status.newKey.platformKeyId ?? '(unknown)'}`);
  if (status.emergency) lines.push('emergency: no quiet gate');
  return lines;
}

function abortFailure(by: DecisionBy | null) {
  return codedFailure(
    FailureCode.ROTATION_ABORTED,
    `parent key rotation aborted${by ? ` by ${by.operator}: ${by.reason}` : ''}`,
  );
}
