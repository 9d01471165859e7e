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
import type { ParsedWorkflowInput } from '../../activities/input-validation.js';
import type { ParentKeyRef } from '../../activities/keys/parent-key.js';
import { codedFailure, FailureCode } from '../../src/domain/failures.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID, platformTaskQueue } from '../../src/domain/ids.js';
import { keyLimitWaitText } from '../../src/domain/key-limit-wait.js';
import type { RotateParentKeyInput } from '../../src/domain/key-slot-input.js';
import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { databaseStep, platformCall } from '../activity-policies.js';
import { ParentKeyDecisions, type ParentKeyDecision } from './rotate-parent-key-decisions.js';
import {
  parentKeyRecordsChangedSignal,
  parentKeyRotationStatusQuery,
  type ParentKeyRotationStatus,
  type PendingProcess,
} from './rotate-parent-key-messages.js';
import { evaluateGate, type GateMemory } from './quiet-gate.js';
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

/** Where a run stands, so a continuation picks up where the previous run waited. */
type Phase = 'create' | 'switch' | 'name' | 'quiet';

type Begun = { old: ParentKeyRef; newRowId: string; keyName: string };
type Usage = Awaited<ReturnType<Activities['observeOldParentKey']>>['usage'];

/** What a run continued as new hands to the next (ids, fingerprints, stages, times, decisions: never a token). */
interface Carried {
  begun: Begun;
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
  // Made first, so its Updates are installed before the input check's await: an Update that comes with the
  // run's first task (right after a start or a continue-as-new) finds them.
  const rotation = new ParentKeyRotation(rawInput);
  // Only the run's own continuation sets `continued` (a caller's is refused as invalid input).
  const input = await validateWorkflowInput('rotateParentKey', rawInput, () => PARENT_KEY_ROTATION_WORKFLOW_ID);
  return rotation.run(input);
}

/** One run of the parent key's rotation: its status, the operator's decisions, and each phase as a method. */
class ParentKeyRotation {
  private readonly status: ParentKeyRotationStatus;
  private readonly carried: Carried | undefined;
  private readonly platform = proxyActivities<Activities>(platformCall(platformTaskQueue(workflowInfo().taskQueue)));
  /** The decisions that apply now (what a wait lists), the same rule as the validators by construction. */
  private readonly applicable: () => ParentKeyDecision[];
  private recordsChanged = false;
  private readonly decisions: ParentKeyDecisions;
  private oldPlatformId: string | null;
  private begun!: Begun;
  private phase: Phase;
  private switchStartedMs: number | null;
  private oldGone: boolean;
  private memory: GateMemory | null;
  private oldRevoked = false;
  // Set from the checked input (`run`): a caller's input is not trusted before the check.
  private input!: ParsedWorkflowInput<'rotateParentKey'>;
  private o!: { [K in keyof typeof DEFAULTS]: string | number };
  private t!: {
    pollMs: number;
    staleMs: number;
    switchDeadlineMs: number;
    quietPeriodMs: number;
    quietDeadlineMs: number;
    overlapWindowMs: number;
  };
  private waits!: Waits;
  private backoff!: Backoff;
  private lastWaitMs!: number;

  constructor(private readonly rawInput: RotateParentKeyInput) {
    // Any JSON a caller sent: read with care until the check refuses it.
    const carried = (this.carried = rawInput?.continued as unknown as Carried | undefined);
    this.status = carried?.status ?? {
      stage: 'creating_key',
      emergency: rawInput?.emergency ?? false,
      oldKey: null,
      newKey: null,
      processes: { live: 0, stragglers: [], pending: [] },
      switchedAt: null,
      activeKeys: [],
      candidates: [],
      quietCheck: null,
      notes: rawInput?.reason ? [`started: ${rawInput.reason}`] : [],
    };
    setHandler(parentKeyRotationStatusQuery, () => this.status);
    this.decisions = new ParentKeyDecisions(carried);
    this.oldPlatformId = carried?.oldPlatformId ?? null;
    setHandler(parentKeyRecordsChangedSignal, () => this.noteRecordsChanged());
    this.applicable = this.decisions.install(this.status, () => this.oldPlatformId);
    if (carried) this.begun = carried.begun;
    this.phase = carried?.phase ?? 'create';
    this.switchStartedMs = carried?.switchStartedMs ?? null;
    this.oldGone = carried?.oldGone ?? false;
    this.memory = carried?.memory ?? null;
  }

  /** The parent key's records changed (the parentKeyRecordsChanged signal): the run looks at them again now. */
  private noteRecordsChanged(): void {
    this.recordsChanged = true;
  }

  /** The checked input's timings, and the waits (a carried wait is shown again). */
  private configure(input: ParsedWorkflowInput<'rotateParentKey'>): void {
    const { carried } = this;
    this.input = input;
    const o = (this.o = { ...DEFAULTS, ...input.options });
    this.t = {
      pollMs: msOf(o.pollInterval),
      staleMs: msOf(o.staleAfter),
      switchDeadlineMs: msOf(o.switchDeadline),
      quietPeriodMs: msOf(o.quietPeriod),
      quietDeadlineMs: msOf(o.quietDeadline),
      overlapWindowMs: msOf(o.overlapWindow),
    };
    this.waits = new Waits({ details: () => detailsOf(this.status) }, carried?.wait ?? null);
    this.backoff = new Backoff(
      this.t.pollMs,
      input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling),
      carried?.polls ?? 0,
    );
    this.lastWaitMs = carried?.lastWaitMs ?? this.t.pollMs;
  }

  /** The run, once its input is checked. */
  async run(input: ParsedWorkflowInput<'rotateParentKey'>): Promise<RotateParentKeyResult> {
    this.configure(input);
    if (!this.carried) await this.begin();
    try {
      if (this.phase === 'create') await this.createKey();
      if (this.phase === 'switch') await this.waitForSwitch();
      if (this.phase === 'name') await this.nameOldKey();
      return await this.revokeOld(await this.passQuietGate());
    } catch (error) {
      if (error instanceof ContinueAsNew) throw error;
      if (!this.oldRevoked) await this.rollBack(error);
      throw error;
    }
  }

  /** Names the old key's platform id before anything changes: recorded, or the only one it can be. */
  private async begin(): Promise<void> {
    const { status } = this;
    this.begun = await db.beginParentKeyRotation({ runKey: workflowInfo().firstExecutionRunId.slice(0, 12) });
    status.oldKey = this.begun.old;
    // This listing is made with the old key, so the old key is among the keys it shows.
    const seen = await this.platform.observeOldParentKey({
      old: this.begun.old,
      newPlatformKeyId: '',
      inferSingle: true,
    });
    this.oldPlatformId = seen.platformKeyId;
    status.candidates = seen.ambiguous;
    if (this.oldPlatformId) status.oldKey = { ...this.begun.old, platformKeyId: this.oldPlatformId };
  }

  /** Past the bound (or when the SDK suggests it); a run just continued never continues again at once. */
  private runFull(): boolean {
    return workflowInfo().historyLength >= 100 && historyFull(this.input.options?.historyEventBound);
  }

  /** The next run takes over with this one's state. */
  private async continueRun(): Promise<never> {
    await handlersFinished();
    const next: Carried = {
      begun: this.begun,
      phase: this.phase,
      status: this.status,
      wait: this.waits.current,
      polls: this.backoff.polls,
      switchStartedMs: this.switchStartedMs,
      oldPlatformId: this.oldPlatformId,
      oldGone: this.oldGone,
      memory: this.memory,
      lastWaitMs: this.lastWaitMs,
      abortBy: this.decisions.abortBy,
      revokeBy: this.decisions.revokeBy,
    };
    return continueAsNew<typeof rotateParentKey>({
      ...this.rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  private async continueIfFull(): Promise<void> {
    if (this.runFull()) await this.continueRun();
  }

  /** Waits `ms` or until `woken`, then throws on an abort. */
  private async sleep(ms: number, woken: () => boolean): Promise<void> {
    this.lastWaitMs = ms;
    await condition(() => this.decisions.abortBy !== null || woken(), ms);
    if (this.decisions.abortBy !== null) throw abortFailure(this.decisions.abortBy);
  }

  /** Creates the new key (waiting at the platform's key limit), verifies it and makes it current. */
  private async createKey(): Promise<void> {
    const { status, begun } = this;
    const created = await waitForKeySlot({
      waits: this.waits,
      backoff: this.backoff,
      decisions: this.decisions,
      applicable: this.applicable,
      create: () => {
        status.stage = 'creating_key';
        return this.platform.createParentKeyOnPlatform({ rowId: begun.newRowId, keyName: begun.keyName });
      },
      atLimit: (limit, waitMs) => {
        status.stage = 'key_limit';
        status.activeKeys = limit.activeKeys;
        return keyLimitWaitText({ run: { kind: 'parent-key' }, activeKeys: limit.activeKeys, retryInMs: waitMs });
      },
      afterWait: (waitMs) => {
        this.lastWaitMs = waitMs;
      },
      full: () => this.runFull(),
      continueAsNew: () => this.continueRun(),
    });
    if (created === 'aborted') throw abortFailure(this.decisions.abortBy);
    status.newKey = created.key;
    this.waits.leave();
    this.backoff.reset();
    status.stage = 'verifying';
    await this.platform.verifyParentKey({ rowId: begun.newRowId });
    await db.makeParentKeyCurrent({ rowId: begun.newRowId });
    this.phase = 'switch';
    this.switchStartedMs = Date.now();
  }

  /** Every live process reports the new key (or stops reporting, or an operator decides); then verified again. */
  private async waitForSwitch(): Promise<void> {
    const { status, begun, o, t } = this;
    status.stage = 'waiting_for_switch';
    for (;;) {
      const before = status.processes.stragglers.join();
      status.processes = await db.observeParentKeySwitch({ rowId: begun.newRowId, staleAfterMs: t.staleMs });
      if (status.processes.stragglers.length === 0 || this.decisions.revokeBy) break;
      if (status.processes.stragglers.join() !== before) this.backoff.reset();
      const pastDeadline = Date.now() - (this.switchStartedMs ?? 0) >= t.switchDeadlineMs;
      status.stage = pastDeadline ? 'held' : 'waiting_for_switch';
      const waitMs = this.backoff.next();
      this.waits.enter(
        status.stage,
        `${switchWaitText(status.processes.pending ?? [], status.processes.live, begun.newRowId)}` +
          (pastDeadline
            ? `; past the switch deadline (${o.switchDeadline}): held for an operator`
            : `; a process silent for ${o.staleAfter} is not waited for; held after ${o.switchDeadline}`),
        this.applicable(),
        waitMs,
      );
      await this.sleep(waitMs, () => this.decisions.revokeBy !== null);
      if (this.decisions.revokeBy) break;
      await this.continueIfFull();
    }
    if (status.processes.stragglers.length === 0) status.switchedAt = new Date(Date.now()).toISOString();
    this.waits.leave();
    this.backoff.reset();
    status.stage = 'verifying';
    await this.platform.verifyParentKey({ rowId: begun.newRowId });
    this.phase = 'name';
  }

  /** The old key's platform id: recorded, or named by an operator; never guessed among the parent's other keys. */
  private async nameOldKey(): Promise<void> {
    const { status, begun } = this;
    while (!this.oldPlatformId && !this.oldGone) {
      this.recordsChanged = false;
      const seen = await this.platform.observeOldParentKey({
        old: begun.old,
        newPlatformKeyId: status.newKey?.platformKeyId ?? '',
      });
      if (seen.platformKeyId) {
        this.oldPlatformId = seen.platformKeyId;
        break;
      }
      if (seen.ambiguous.length === 0) {
        // No active key could be it: the old key is no longer active on the platform.
        this.oldGone = true;
        break;
      }
      if ((status.candidates ?? []).join() !== seen.ambiguous.join()) this.backoff.reset();
      status.candidates = seen.ambiguous;
      status.stage = 'naming_old_key';
      const waitMs = this.backoff.next();
      status.quietCheck =
        `the old key's platform id is unknown (imported without --key-id) and ${seen.ambiguous.length} ` +
        `active platform keys could be it (${seen.ambiguous.join(', ')})`;
      this.waits.enter(
        'naming_old_key',
        `an operator to name the old key among the parent's ${seen.ambiguous.length} active platform keys ` +
          `that could be it (${seen.ambiguous.join(', ')}): find ours with \`tenantctl parent-key ` +
          `platform-keys\`, name it with \`tenantctl parent-key identify <keyId>\`; the parent's other keys ` +
          `are never touched`,
        this.applicable(),
        waitMs,
      );
      await this.sleep(waitMs, () => this.recordsChanged);
      await this.continueIfFull();
    }
    if (this.oldPlatformId) status.oldKey = { ...begun.old, platformKeyId: this.oldPlatformId };
    status.candidates = [];
    this.waits.leave();
    this.backoff.reset();
    this.phase = 'quiet';
  }

  /**
   * The quiet gate on the old key (last use, else the overlap window), unless it is gone, an emergency, or an
   * operator says revoke now. Returns what the gate saw when it passed, for the revoke's own re-check.
   */
  private async passQuietGate(): Promise<Usage> {
    const { status, begun, t } = this;
    status.stage = 'waiting_for_quiet';
    while (!this.oldGone && !status.emergency && !this.decisions.revokeBy) {
      const seen = await this.platform.observeOldParentKey({
        old: { ...begun.old, platformKeyId: this.oldPlatformId },
        newPlatformKeyId: status.newKey?.platformKeyId ?? '',
      });
      const memory = (this.memory ??= { deployedAtMs: Date.now(), deployedAtPlatform: null, lastSeen: null, polls: 0 });
      const lastSeenBefore = memory.lastSeen?.value;
      const gate = evaluateGate(memory, seen.usage, null, Date.now(), {
        quietPeriodMs: t.quietPeriodMs,
        propagationAllowanceMs: t.pollMs * 2,
        pollIntervalMs: this.lastWaitMs,
        quietDeadlineMs: t.quietDeadlineMs,
        overlapWindowMs: t.overlapWindowMs,
      });
      status.quietCheck = gate.view.verdict;
      if (gate.kind === 'gone') break;
      if (gate.kind === 'quiet') {
        this.waits.leave();
        return gate.observed;
      }
      if (memory.lastSeen?.value !== lastSeenBefore) this.backoff.reset();
      status.stage = gate.kind === 'held' ? 'held' : 'waiting_for_quiet';
      const waitMs = this.backoff.next();
      this.waits.enter(
        status.stage,
        `the old key (platform id ${this.oldPlatformId}) to show no use for ${this.o.quietPeriod}: ` +
          gate.view.verdict,
        this.applicable(),
        waitMs,
      );
      await this.sleep(waitMs, () => this.decisions.revokeBy !== null || status.emergency);
      await this.continueIfFull();
    }
    this.waits.leave();
    return null;
  }

  private async revokeOld(observed: Usage): Promise<RotateParentKeyResult> {
    const { status, begun, oldPlatformId, oldGone } = this;
    status.stage = 'revoking';
    if (!oldPlatformId && !oldGone)
      throw codedFailure(FailureCode.NO_ACTIVE_KEY, "the old key's platform id is unknown: it was not revoked");
    const by = this.decisions.revokeBy;
    await this.platform.revokeOldParentKey({
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
    this.oldRevoked = true;
    status.stage = 'completed';
    return {
      outcome: 'completed',
      oldKey: { ...begun.old, platformKeyId: oldPlatformId },
      newKey: status.newKey!,
      emergency: status.emergency,
      quietCheck: status.quietCheck ?? (status.emergency ? 'emergency: no quiet gate' : 'operator decision'),
    };
  }

  /** Abort or failure before the old key is revoked: the old key is current again and the new one is revoked. */
  private async rollBack(error: unknown): Promise<void> {
    const by = this.decisions.abortBy;
    this.waits.leave();
    await CancellationScope.nonCancellable(() =>
      this.platform.rollBackParentKeyRotation({
        oldRowId: this.begun.old.rowId,
        newRowId: this.begun.newRowId,
        keyName: this.begun.keyName,
        operator: by?.operator ?? null,
        why: by ? `aborted by ${by.operator}: ${by.reason}` : isCancellation(error) ? 'cancelled' : 'failed',
      }),
    );
    this.status.stage = 'aborted';
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
