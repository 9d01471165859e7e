import {
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { IssueKeyResult } from '../../activities/keys/issue-key.js';
import { msOf } from '../../src/domain/durations.js';
import { platformTaskQueue } from '../../src/domain/ids.js';
import { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';
import type { ParsedRotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';
import {
  databaseStep,
  notifyDeploy as notifyDeployPolicy,
  platformCall,
  projectEnvDeploy as projectEnvDeployPolicy,
} from '../activity-policies.js';
import { QUIET_GATE_WATCH_PATCH, watchKeys, watchTimes } from './quiet-watch.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';
import type { KeyUsage } from '../../activities/keys/rotation.js';
import { evaluateGate, gateTimingsOf, type GateDecision, type GateMemory, type GateTimings } from './quiet-gate.js';
import { rotationSettledSignal, type QuietCheckView, type RotationSettled } from './rotate-tenant-key-messages.js';
import { waitForKeySlot, type KeySlotDecisions, type KeySlotWait } from './key-slot-wait.js';

const db = proxyLocalActivities<Activities>(databaseStep);
// The notify deployer is retried until the parent's endpoint answers 2xx (no attempt limit).
const notifyDeploy = proxyActivities<Activities>(notifyDeployPolicy);

/** What a rotation and an adoption of a tenant's key slot take alike (the inputs share these fields). */
export type SlotRunInput = Pick<ParsedRotateTenantKeyInput, 'externalRef' | 'slot' | 'options' | 'deployer' | 'reason'>;

/** The part of a run's status (its query's answer) the shared steps write. */
export interface SlotRunStatus<Stage extends string> {
  externalRef: string;
  slot: string;
  stage: Stage;
  waitingFor: string | null;
  notes: string[];
}

/** Where a continued run resumes: the key-limit wait, the quiet gate's polls, or held for a decision. */
export type SlotPhase = 'key_limit' | 'gate' | 'held';

/** The open rotation record a run has begun (beginRotation, beginAdoption), as far as the shared steps read it. */
export interface SlotBegun {
  rotationId: string;
  subaccountId: string;
  toGeneration: number;
}

/** What every continuation of a slot run carries, whatever else its workflow adds. */
export interface SlotRunCarried<Begun extends SlotBegun, Status> {
  phase: SlotPhase;
  begun: Begun;
  status: Status;
  wait: WaitView | null;
  /** The current poll's backoff count. */
  polls: number;
  /** When the gate's previous look began (the interval it judges a late use by runs from there). */
  lookedAtMs: number | null;
  /** What the fleet that started the run was told (absent in runs continued before the fleet patch: 'none'). */
  fleetTold?: FleetTold;
}

type Change = Parameters<Activities['recordRotation']>[0]['change'];
type DeployInput = Parameters<Activities['deployKeyGeneration']>[0];
export type SettledOutcome = RotationSettled['outcome'];

/**
 * 1.0 compatibility: a rotation started by a fleet tells it when it begins waiting out its quiet gate, and
 * then how it settled (rotate-fleet.ts, same patch): runs recorded before it never tell the wait.
 */
export const FLEET_QUIET_RELEASE_PATCH = 'fleet-releases-quiet-waits';

/**
 * 1.0 compatibility (issue 49): a rotation sets TenantExternalRef with its first TenantStatus (one upsert, not
 * two), tells its parent no end that the parent never reads, and verifies its new key and takes the quiet gate's
 * first look in one platform activity (one round trip through Temporal, not two); and it counts its new key's deploy
 * as made once it is sent, so a roll-back after a cancel mid-deploy redeploys the old key before it revokes the new
 * one. Runs recorded before it keep the old commands. (An earlier `rotation-fewer-tasks`, asked after the input
 * check, was reverted unreleased.)
 */
export const ROTATION_FEWER_ROUND_TRIPS_PATCH = 'rotation-fewer-round-trips';

/** Ends a parent reads only from a run it released (`settles`); rotateTenantKeyOnSchedule reads no tell. */
const ENDS: readonly SettledOutcome[] = ['completed', 'aborted', 'failed'];

/**
 * What the fleet run that started this one was told: nothing yet; held or at the key limit first (counted
 * as held then, as before the patch); that it waits out its quiet gate (released from the bound, not yet
 * counted); or, after that, how it settled (counted: nothing more is told).
 */
export type FleetTold = 'none' | 'held' | 'waiting' | 'settled';

/**
 * Tells the fleet run that started this one (if any) where it stands: what it was told is carried by
 * continue-as-new (`told`). A rotation and an adoption each hold one, and hand it to their SlotRun.
 */
export class FleetTell {
  /**
   * An end told to a run that was not released (no `settles`) changes nothing in rotateFleet and is not read by
   * rotateTenantKeyOnSchedule: skipping it saves the signal's two events and the workflow task its answer takes.
   * Set once the run's patch says so (ROTATION_FEWER_ROUND_TRIPS_PATCH).
   */
  skipsUnreadEnds = false;

  constructor(public told: FleetTold) {}

  /**
   * Tells the fleet how the run settled or that it waits; never fails. Once it told the fleet it waits out its
   * quiet gate, its next tell settles it (`settles`), and nothing after.
   */
  tellParent(outcome: SettledOutcome): Promise<void> {
    const parent = workflowInfo().parent;
    if (!parent || this.told === 'settled') return Promise.resolve();
    if (this.skipsUnreadEnds && this.told !== 'waiting' && ENDS.includes(outcome)) return Promise.resolve();
    const settles = this.told === 'waiting' && outcome !== 'waiting_for_quiet';
    if (outcome === 'waiting_for_quiet') this.told = 'waiting';
    else if (settles) this.told = 'settled';
    else if (this.told === 'none' && (outcome === 'held' || outcome === 'key_limit')) this.told = 'held';
    return getExternalWorkflowHandle(parent.workflowId)
      .signal(rotationSettledSignal, {
        workflowId: workflowInfo().workflowId,
        outcome,
        ...(settles ? { settles } : {}),
      })
      .catch(() => undefined);
  }

  /** A run its fleet released (it waits out its quiet gate) that ends without a tell of its own: tell it now. */
  async tellParentIfReleased(outcome: 'aborted' | 'failed'): Promise<void> {
    if (this.told === 'waiting') await this.tellParent(outcome);
  }

  /** Before a wait for quiet: the wait calls the platform only to look again, so the fleet need not count it. */
  async releaseWhileQuiet(): Promise<void> {
    if (this.told === 'none' && workflowInfo().parent && patched(FLEET_QUIET_RELEASE_PATCH))
      await this.tellParent('waiting_for_quiet');
  }
}

/** What a workflow's own class gives the SlotRun it holds. */
export interface SlotRunParts<Status, Carried> {
  rawInput: object;
  status: Status;
  carried: Carried | undefined;
  /** The run's own lines in the Web UI's current details, under its wait. */
  details: (status: Status) => string[];
  /** What else the next run needs to answer and decide the same (a decision that landed, the gate's memory). */
  carryAlso: () => object;
  /** The decisions that apply now (what a wait lists). */
  applicable: () => readonly string[];
  fleet: FleetTell;
  /** Whether waiting out the quiet gate releases the run from its fleet's bound (a rotation's; not an adoption's). */
  releasesFleetWhileQuiet: boolean;
  /**
   * Whether TenantExternalRef goes out with the run's first TenantStatus, in one upsert (the workflow's patch);
   * its flow then shows a stage in the activation `run` calls it in.
   */
  refWithFirstStatus?: () => boolean;
}

/** How a run ends other than by its flow's result (not a continuation), in a non-cancellable scope. */
export interface SlotRunEnding {
  /** Leave no record open. */
  settleFailure(error: unknown, cancelled: boolean): Promise<void>;
  /** After settleFailure, before the error is thrown on (the outcome's log line). */
  failed?(error: unknown, cancelled: boolean): void;
}

/**
 * The steps a run of a tenant's key slot (rotateTenantKey, adoptTenantKeys) takes alike, as a helper each
 * workflow's own class holds (not a base class): the timings and waits, the key create at the limit, the
 * history bound and continue-as-new, the record, the deploy, the quiet gate's looks and the hold. The
 * workflow's class keeps its status, its decisions (installed in its constructor) and its flow.
 *
 * Waits (workflows/waits.ts): `show` a stage the run is not waiting in, `waitAt` a wait with the decisions
 * that apply; both set TenantStatus `rotation_<stage>`. Past the history bound `continueRun` continues as
 * new in the phase the run was in, with what `carryAlso` says the next run needs.
 */
export class SlotRun<
  Stage extends string,
  Status extends SlotRunStatus<Stage>,
  Begun extends SlotBegun,
  Carried extends SlotRunCarried<Begun, Status>,
> {
  // Set from the checked input (`run`): a caller's input is not trusted before the check.
  timings!: GateTimings;
  t!: Record<keyof typeof DEFAULT_TIMINGS, string | number>;
  private pollCeilingMs: number | undefined;
  private bound: number | undefined;
  waits!: Waits;
  backoff!: Backoff;
  private slotInput!: SlotRunInput;
  readonly platform: ReturnType<typeof proxyActivities<Activities>>;
  private readonly projectEnvDeploy: ReturnType<typeof proxyActivities<Activities>>;
  lookedAtMs: number | null;
  begun: Begun | undefined;
  /** QUIET_GATE_WATCH_PATCH's answer, once asked (`watches`). */
  private watchPatch: boolean | undefined;
  /** The records the gate's last look read: what "nothing changed" means to the watch that follows it. */
  private seen: Record<string, KeyUsage | null> | null = null;
  private readonly queue: string;
  private readonly status: Status;
  private readonly carried: Carried | undefined;

  /**
   * Made before the input check's await, so the workflow's constructor installs its query and Updates in the
   * run's first task: an Update that comes with it (right after a start or a continue-as-new) finds them.
   */
  constructor(private readonly parts: SlotRunParts<Status, Carried>) {
    const queue = (this.queue = platformTaskQueue(workflowInfo().taskQueue));
    this.platform = proxyActivities<Activities>(platformCall(queue));
    this.projectEnvDeploy = proxyActivities<Activities>(projectEnvDeployPolicy(queue));
    this.status = parts.status;
    this.carried = parts.carried;
    this.lookedAtMs = parts.carried?.lookedAtMs ?? null;
    this.begun = parts.carried?.begun;
  }

  private get externalRef(): string {
    return this.status.externalRef;
  }

  private get slot(): string {
    return this.status.slot;
  }

  /** The checked input's timings, and the waits (a carried wait is shown again). */
  private configure(input: SlotRunInput): void {
    const { carried } = this;
    this.slotInput = input;
    this.t = { ...DEFAULT_TIMINGS, ...input.options };
    this.timings = gateTimingsOf(this.t);
    this.pollCeilingMs = input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling);
    this.bound = input.options?.historyEventBound;
    this.waits = new Waits(
      { tenantStatus: (stage) => `rotation_${stage}`, details: () => this.parts.details(this.status) },
      carried?.wait ?? null,
    );
    this.backoff = new Backoff(
      msOf(this.t.keyLimitRetryInterval),
      this.pollCeilingMs,
      carried?.phase === 'key_limit' ? carried.polls : 0,
    );
  }

  /** Whether the run watches between the gate's looks: QUIET_GATE_WATCH_PATCH, asked the first time. */
  watches(): boolean {
    return (this.watchPatch ??= patched(QUIET_GATE_WATCH_PATCH));
  }

  /** The run, once its input is checked: `steps` is its flow; a failure or a cancel ends as `ending` says. */
  async run<Result>(input: SlotRunInput, steps: () => Promise<Result>, ending: SlotRunEnding): Promise<Result> {
    this.configure(input);
    if (!this.carried) {
      const ref = [{ key: tenantExternalRefKey, value: this.externalRef }];
      if (this.parts.refWithFirstStatus?.()) this.waits.withNextStatus(ref);
      else upsertSearchAttributes(ref);
    }
    try {
      return await steps();
    } catch (error) {
      // Continuing as new is not a failure: the next run carries on with this one's state.
      if (error instanceof ContinueAsNew) throw error;
      const cancelled = isCancellation(error);
      await CancellationScope.nonCancellable(() => ending.settleFailure(error, cancelled));
      ending.failed?.(error, cancelled);
      throw error;
    }
  }

  /** What beginRotation and beginAdoption both take: the slot, its deployer, this run, and why. */
  beginInput() {
    return {
      externalRef: this.externalRef,
      slot: this.slot,
      deployer: this.slotInput.deployer,
      workflowId: workflowInfo().workflowId,
      runId: workflowInfo().runId,
      reason: this.slotInput.reason ?? null,
    };
  }

  /** A stage the run is not waiting in. */
  show(stage: Stage): void {
    this.status.stage = stage;
    this.status.waitingFor = null;
    this.waits.leave(stage);
  }

  /** A wait: what it waits for, the decisions that apply, and when the run looks again by itself (ms). */
  waitAt(stage: Stage, waitingFor: string, nextCheckInMs: number | null = null): void {
    this.status.stage = stage;
    this.status.waitingFor = waitingFor;
    this.waits.enter(stage, waitingFor, this.parts.applicable(), nextCheckInMs);
  }

  /** At the key limit (in waitForKeySlot's `atLimit`): the stage, and what the run waits for. */
  atKeyLimit(waitingFor: string): string {
    this.status.stage = 'key_limit' as Stage;
    return (this.status.waitingFor = waitingFor);
  }

  /**
   * Creates the new generation with onboarding's own activity (same key names, same orphan handling),
   * waiting at the tenant's active-key limit (waitForKeySlot) until an operator frees a slot
   * (retryKeyCreate), aborts, or the slow retry finds room; past the history bound it continues as new.
   */
  createKey(
    decisions: KeySlotDecisions,
    atLimit: KeySlotWait<IssueKeyResult>['atLimit'],
    afterWait?: KeySlotWait<IssueKeyResult>['afterWait'],
  ) {
    const b = this.begun!;
    return waitForKeySlot<IssueKeyResult>({
      waits: this.waits,
      backoff: this.backoff,
      decisions,
      applicable: this.parts.applicable,
      create: () =>
        this.platform.issueTenantKey({
          externalRef: this.externalRef,
          subaccountId: b.subaccountId,
          slot: this.slot,
          generation: b.toGeneration,
        }),
      atLimit,
      ...(afterWait ? { afterWait } : {}),
      full: () => this.historyFull(),
      continueAsNew: () => this.continueRun('key_limit'),
    });
  }

  historyFull(): boolean {
    return historyFull(this.bound);
  }

  /**
   * Continues as new in `phase`: decisions sent to the workflow id land on the next run. Throws
   * ContinueAsNew (let through by `run`).
   */
  async continueRun(phase: SlotPhase): Promise<never> {
    await handlersFinished();
    const { told } = this.parts.fleet;
    const next = {
      phase,
      begun: this.begun!,
      status: this.status,
      wait: this.waits.current,
      polls: this.backoff.polls,
      lookedAtMs: this.lookedAtMs,
      ...(told === 'none' ? {} : { fleetTold: told }),
      ...this.parts.carryAlso(),
    };
    return continueAsNew<(input: object) => Promise<unknown>>({
      ...this.parts.rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  record(change: Change, audit?: string, operator?: string) {
    return db.recordRotation({
      rotationId: this.begun!.rotationId,
      externalRef: this.externalRef,
      change,
      ...(audit ? { audit } : {}),
      ...(operator ? { operator } : {}),
    });
  }

  /** Sends a generation out through the deployer (retried until it succeeds: a wait the caller enters). */
  deploy(deployer: DeployInput['deployer'], input: Omit<DeployInput, 'deployer'>) {
    const acts = deployer.kind === 'notify' ? notifyDeploy : this.projectEnvDeploy;
    return acts.deployKeyGeneration({ ...input, deployer });
  }

  /** The quiet gate's poll: from the base interval, backing off to the ceiling; `polls` carried over. */
  gateBackoff(polls = 0): Backoff {
    return new Backoff(this.timings.pollIntervalMs, this.pollCeilingMs, polls);
  }

  /**
   * One look of the quiet gate (workflows/keys/quiet-gate.ts) at `keys`: their records and the new key's
   * read once, each judged by the interval actually waited since the previous look (polls back off),
   * not the configured one. `freshUse`: the new key's first use stands for deploy time on the platform's clock.
   */
  async lookAtGate(
    subaccountId: string,
    keys: ReadonlyArray<{ keyId: string; memory: GateMemory }>,
    newKeyId: string,
    freshUse = true,
  ): Promise<GateDecision[]> {
    const lookingAtMs = Date.now();
    const usage = await this.platform.observeKeyUsage({
      subaccountId,
      keyIds: [...keys.map((k) => k.keyId), newKeyId],
    });
    return this.judge(usage, keys, newKeyId, freshUse, { lookedAtMs: lookingAtMs });
  }

  /**
   * A rotation's verify of its new key and the gate's first look, in one platform activity
   * (ROTATION_FEWER_ROUND_TRIPS_PATCH): judged as `lookAtGate` judges, the look taken to begin as the step is sent.
   */
  async verifyAndLook(
    key: { generation: number; subaccountId: string },
    keys: ReadonlyArray<{ keyId: string; memory: GateMemory }>,
    newKeyId: string,
  ): Promise<GateDecision[]> {
    const lookingAtMs = Date.now();
    const usage = await this.platform.verifyKeyAndObserveUsage({
      externalRef: this.externalRef,
      slot: this.slot,
      generation: key.generation,
      subaccountId: key.subaccountId,
      keyIds: [...keys.map((k) => k.keyId), newKeyId],
    });
    return this.judge(usage, keys, newKeyId, true, { lookedAtMs: lookingAtMs });
  }

  /**
   * Judges one look, by the time since the run's previous look. `look.lookedAtMs`: when it began; `look.looks`: how
   * many looks it stands for (a watch's looks that saw nothing new count in the gate's polls and the backoff).
   */
  private judge(
    usage: Awaited<ReturnType<Activities['observeKeyUsage']>>,
    keys: ReadonlyArray<{ keyId: string; memory: GateMemory }>,
    newKeyId: string,
    freshUse: boolean,
    look: { lookedAtMs: number; looks?: number },
  ): GateDecision[] {
    const nowMs = Date.now();
    const unseen = (look.looks ?? 1) - 1;
    this.backoff.polls += unseen;
    const decisions = keys.map(({ keyId, memory }) => {
      memory.polls += unseen;
      return evaluateGate(memory, usage[keyId] ?? null, freshUse ? (usage[newKeyId] ?? null) : null, nowMs, {
        ...this.timings,
        pollIntervalMs: nowMs - (this.lookedAtMs ?? memory.deployedAtMs),
      });
    });
    this.lookedAtMs = look.lookedAtMs;
    this.seen = usage;
    return decisions;
  }

  /**
   * Between two looks of the gate (QUIET_GATE_WATCH_PATCH): one activity on the platform queue looks from the
   * next poll on (or from when the verdict can change, if sooner), backing off as the timers did, and answers only
   * when an old key's record changed, the new key shows the first use the gate still wants, or the verdict can leave
   * "wait" by time alone (waitEndsAtMs). Its looks that see nothing new are its retries: no history event, no
   * workflow task. Returns the gate's decisions at the look that answered, or null when `woken` (a decision, an
   * escalation) ended the wait first: the watch is then cancelled (at once when between two looks).
   */
  async watchForQuiet(
    subaccountId: string,
    keys: ReadonlyArray<{ keyId: string; memory: GateMemory; method: QuietCheckView['method'] }>,
    newKeyId: string,
    freshUse: boolean,
    waitingFor: (waitMs: number) => string,
    woken: () => boolean,
  ): Promise<GateDecision[] | null> {
    // The wait calls the platform only to look again: the fleet need not count it against its bound.
    if (this.parts.releasesFleetWhileQuiet) await this.parts.fleet.releaseWhileQuiet();
    const nowMs = Date.now();
    const { verdictMs, times } = watchTimes(
      keys,
      this.timings,
      this.lookedAtMs,
      nowMs,
      this.backoff.next(),
      this.backoff,
    );
    const { firstLookMs } = times;
    const watching =
      `${waitingFor(firstLookMs - nowMs)}, then backing off; judged again when the key's use changes, or at ` +
      `${new Date(verdictMs).toISOString()} when the verdict can change by time`;
    this.waitAt('waiting_for_quiet' as Stage, watching, firstLookMs - nowMs);
    const answer = await watchKeys(
      this.queue,
      {
        subaccountId,
        keyIds: keys.map((k) => k.keyId),
        newKeyId,
        freshNeeded: freshUse && keys.some((k) => k.memory.deployedAtPlatform === null),
        seen: Object.fromEntries(keys.map((k) => [k.keyId, this.seen?.[k.keyId] ?? null])),
        ...times,
      },
      woken,
    );
    if (!answer) return null;
    return this.judge(answer.usage, keys, newKeyId, freshUse, answer);
  }

  /** Between two looks of the gate: the wait shown, until the next look or `woken`. */
  async waitForQuiet(waitingFor: (waitMs: number) => string, woken: () => boolean): Promise<void> {
    // The wait calls the platform only to look again: the fleet need not count it against its bound.
    if (this.parts.releasesFleetWhileQuiet) await this.parts.fleet.releaseWhileQuiet();
    const waitMs = this.backoff.next();
    this.waitAt('waiting_for_quiet' as Stage, waitingFor(waitMs), waitMs);
    await condition(woken, waitMs);
  }

  /**
   * Held: only a decision (or what `woken` also accepts) ends it, so it sets no timer and polls nothing,
   * adding no events while it waits. It re-checks its history only (signals and Updates add events),
   * continuing as new past the bound.
   */
  async holdUntil(woken: () => boolean): Promise<void> {
    await condition(() => woken() || this.historyFull());
    if (!woken()) await this.continueRun('held');
  }
}
