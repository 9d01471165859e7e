/**
 * rotateTenantKey — why: keys leak and age, and the contract's overlap rotation (create, deploy,
 * verify the old key is unused, revoke) must never cut off a consumer that still uses the old key.
 *
 *   beginRotation ─► issueTenantKey ⟲ (key limit: held for an operator, never a key in use revoked)
 *   (refuses unknown,  ─► deploy (notify | project-env) ─► verifyTenantKey (new key works)
 *    closing, closed)  ─► quiet gate ⟲ poll key records ─► revoke old ─► completed
 *                                     └► deadline / late use ─► held: revokeAnyway | abortRotation
 *   (operator decisions are Updates with validators: rotate-tenant-key-decisions.ts)
 *   abort, cancel or failure before the old key is revoked ─► redeploy old, revoke new (no extra key)
 *
 * Waits (workflows/waits.ts): key_limit, deploying, waiting_for_quiet, held and a roll-back's redeploy are
 * visible through `currentWait` (with the decisions that apply) and TenantStatus `rotation_<stage>`; the
 * key-limit and quiet-gate polls back off to `pollCeiling`; past `historyEventBound` (or when the SDK
 * suggests it) the run continues as new in the phase it was in, carrying its state (`Carried`). A held
 * run does not poll: only a decision (or an escalation) ends it, so it adds no events while it waits.
 *
 * One run per tenant slot: the workflow id is `rotate:<externalRef>:<slot>` and the records allow
 * one open rotation per slot. Platform-calling activities run on the platform task queue, whose
 * Temporal rate limit paces the whole fleet. Tokens never pass through here.
 *
 * The run's state is one `Rotation` object (no base class): its query and Updates are installed in its constructor,
 * each decision taken by its own method (`decide`); the steps it takes alike with an adoption are a `SlotRun` it
 * holds, its tells to a fleet a `FleetTell` (key-slot-run.ts).
 */
import { CancellationScope, patched, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { BeginRotationResult } from '../../activities/keys/rotation.js';
import type { IssueKeyResult } from '../../activities/keys/issue-key.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import { keyLimitWaitText } from '../../src/domain/key-limit-wait.js';
import type { ParsedRotateTenantKeyInput, RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { expectationOf, isKeyInUseRefusal, type GateDecision, type GateMemory } from './quiet-gate.js';
import { rotationDetails } from './rotate-tenant-key-details.js';
import {
  installRotationDecisions,
  ROTATION_EFFECTS,
  type Decision,
  type RotationDecision,
  type RotationSignals,
} from './rotate-tenant-key-decisions.js';
import { recordOutcome } from '../outcomes.js';
import {
  rotationStatusQuery,
  type OperatorDecision,
  type RotateTenantKeyResult,
  type RotationStage,
  type RotationStatus,
} from './rotate-tenant-key-messages.js';
import { databaseStep } from '../activity-policies.js';
import { FleetTell, ROTATION_FEWER_ROUND_TRIPS_PATCH, SlotRun, type SlotRunCarried } from './key-slot-run.js';

export * from './rotate-tenant-key-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);

export async function rotateTenantKey(rawInput: RotateTenantKeyInput): Promise<RotateTenantKeyResult> {
  // Made first, so its Updates are installed before the input check's await (SlotRun, key-slot-run.ts).
  const rotation = new Rotation(rawInput);
  // Asked before the first local activity (a patch asked after one splits differently on replay).
  rotation.fewerRoundTrips(patched(ROTATION_FEWER_ROUND_TRIPS_PATCH));
  // The id is the business key: a second start for the same slot then cannot run beside this one.
  const input: ParsedRotateTenantKeyInput = await validateWorkflowInput('rotateTenantKey', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  return rotation.run(input);
}

/** What a run continued as new hands to the next (never a secret: ids, fingerprints, stages, times, decisions). */
interface Carried extends SlotRunCarried<BeginRotationResult, RotationStatus> {
  memory: GateMemory | null;
  /** A decision that landed and was not yet acted on. */
  decision: Decision | null;
  /** The key-limit wait told the fleet (and audited) once. */
  told: boolean;
  /** The first run's start, for the outcome's duration. */
  startedAtMs: number;
}

/** One rotation run: its status, the operator's decisions, and each step of the flow as a method. */
class Rotation {
  private readonly status: RotationStatus;
  private readonly carried: Carried | undefined;
  /** The steps it takes alike with an adoption (key-slot-run.ts). */
  private readonly slotRun: SlotRun<RotationStage, RotationStatus, BeginRotationResult, Carried>;
  /** What the fleet that started this run was told. */
  private readonly fleet: FleetTell;
  private readonly signals: RotationSignals;
  private readonly applicable: () => readonly string[];
  private readonly startedAtMs: number;
  private deployed: boolean;
  private oldRevoked = false;
  private told: boolean;
  private memory: GateMemory | null;
  /** ROTATION_FEWER_ROUND_TRIPS_PATCH, asked as the run starts (runs recorded before it say no). */
  private fewer = false;

  private input!: ParsedRotateTenantKeyInput;

  constructor(rawInput: RotateTenantKeyInput) {
    // Any JSON a caller sent: read with care until the check refuses it.
    const carried = (this.carried = rawInput?.continued as Carried | undefined);
    this.status = carried?.status ?? initialStatus(rawInput);
    // A run continued before the fleet patch carries no fleetTold: one that told held (or its key limit) was counted.
    this.fleet = new FleetTell(
      carried?.fleetTold ?? (carried && (carried.told || carried.status?.heldReason) ? 'held' : 'none'),
    );
    this.slotRun = new SlotRun({
      rawInput,
      status: this.status,
      carried,
      details: rotationDetails,
      carryAlso: () => this.carryAlso(),
      applicable: () => this.applicable(),
      fleet: this.fleet,
      // Its quiet gate waits an hour and more by default: the fleet that started it need not count it meanwhile.
      releasesFleetWhileQuiet: true,
      // `steps` shows `starting` in run's activation.
      refWithFirstStatus: () => this.fewer,
    });
    this.startedAtMs = carried?.startedAtMs ?? workflowInfo().startTime.getTime();
    this.deployed = carried ? carried.phase !== 'key_limit' : false;
    this.told = carried?.told ?? false;
    this.memory = carried?.memory ?? null;
    this.signals = {
      decision: carried?.decision ?? undefined,
      retry: false,
      aborted() {
        return this.decision?.kind === 'abort';
      },
    };
    setHandler(rotationStatusQuery, () => this.status);
    this.applicable = installRotationDecisions(this.status, this.signals, (name, by) => this.decide(name, by));
  }

  private get externalRef(): string {
    return this.status.externalRef;
  }

  private get slot(): string {
    return this.status.slot;
  }

  /** Whether the run takes ROTATION_FEWER_ROUND_TRIPS_PATCH's path. */
  fewerRoundTrips(yes: boolean): void {
    this.fewer = yes;
    this.fleet.skipsUnreadEnds = yes;
  }

  /** The run, once its input is checked. */
  run(input: ParsedRotateTenantKeyInput): Promise<RotateTenantKeyResult> {
    this.input = input;
    return this.slotRun.run(input, () => this.steps(), {
      settleFailure: (error, cancelled) => this.settleFailure(error, cancelled),
      failed: (_error, cancelled) => this.failed(cancelled),
    });
  }

  /**
   * Takes an accepted decision (its validator checked it applies now): an escalation makes the run an
   * emergency, a retry tries the key create again, a revokeAnyway or an abort is the gate's decision.
   */
  private decide(name: RotationDecision, by: NonNullable<Decision['by']>): string {
    const { status, signals } = this;
    if (name === 'escalateToEmergency') {
      if (status.emergency) return 'already an emergency rotation: nothing changed';
      status.emergency = true;
      status.notes.push(`escalated to emergency by ${by.operator}: ${by.reason}`);
      return 'quiet period zero from now on: the old key is revoked right after the new one is verified';
    }
    if (name === 'retryKeyCreate') signals.retry = true;
    else signals.decision ??= { kind: name === 'revokeAnyway' ? 'revoke' : 'abort', by };
    return ROTATION_EFFECTS[name];
  }

  private carryAlso() {
    return {
      memory: this.memory,
      decision: this.signals.decision ?? null,
      told: this.told,
      startedAtMs: this.startedAtMs,
    };
  }

  private async steps(): Promise<RotateTenantKeyResult> {
    const { carried } = this;
    if (!carried) this.slotRun.show('starting');
    const b = (this.slotRun.begun ??= await db.beginRotation({
      ...this.slotRun.beginInput(),
      emergency: this.input.emergency,
    }));
    if (!carried) this.begin(b);
    let decision: Decision;
    if (!carried || carried.phase === 'key_limit') {
      const issued = await this.issueKey(b);
      if (issued === 'aborted') {
        await this.rollBack('aborted', 'aborted at the active-key limit', this.signals.decision?.by ?? null);
        return this.finished('aborted');
      }
      this.status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint, status: 'issued' };
      decision = await this.deployAndVerify(b);
    } else if (carried.phase === 'gate') {
      this.slotRun.backoff = this.slotRun.gateBackoff(carried.polls);
      decision = await this.passQuietGate(false);
    } else decision = await this.holdForDecision();
    for (;;) {
      if (decision.kind === 'abort') {
        await this.rollBack('aborted', decision.by?.reason ?? 'aborted by an operator', decision.by);
        await this.fleet.tellParentIfReleased('aborted');
        return this.finished('aborted');
      }
      if (await this.revokeOld(decision)) return this.finished('completed');
      this.status.notes.push(
        `revoke refused at ${new Date().toISOString()}: the old key was used after the ` +
          `quiet gate passed; back to the quiet gate`,
      );
      decision = await this.passQuietGate();
    }
  }

  /** The rotation record is open: the status names its generations, keys and deployer. */
  private begin(b: BeginRotationResult): void {
    Object.assign(this.status, {
      rotationId: b.rotationId,
      subaccountId: b.subaccountId,
      fromGeneration: b.fromGeneration,
      toGeneration: b.toGeneration,
      deployer: b.deployer.kind,
    });
    this.status.oldKey = { keyId: b.oldKeyId, fingerprint: b.oldFingerprint, status: 'active' };
    if (b.adopted) this.status.notes.push('took over an open rotation of this slot left by an earlier run');
    this.slotRun.show('creating_key');
  }

  /**
   * The new generation (the base's createKey): at the limit the wait lists the active keys and which look
   * unused; the key being rotated is in use and is never a candidate to make room.
   */
  private async issueKey(b: BeginRotationResult): Promise<Extract<IssueKeyResult, { state: 'issued' }> | 'aborted'> {
    const { status, externalRef, slot } = this;
    const issued = await this.slotRun.createKey(this.signals, async (limit, waitMs) => {
      status.activeKeys = limit.activeKeys.map((k) => ({
        ...k,
        isCurrentKeyOfSlot: k.id === b.oldKeyId,
        looksUnused:
          k.id !== b.oldKeyId &&
          k.lastUseKnown &&
          (k.lastUsedAt === null || Date.now() - Date.parse(k.lastUsedAt) > this.slotRun.timings.quietPeriodMs),
      }));
      const unused = status.activeKeys.filter((k) => k.looksUnused).map((k) => k.id);
      await this.slotRun.record(
        { state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: status.activeKeys } },
        this.told ? undefined : 'rotation.key_limit',
      );
      if (!this.told) await this.fleet.tellParent('key_limit');
      this.told = true;
      return this.slotRun.atKeyLimit(
        keyLimitWaitText({
          run: { kind: 'rotation', externalRef, slot },
          activeKeys: status.activeKeys,
          unused,
          retryInMs: waitMs,
        }),
      );
    });
    if (issued !== 'aborted' && status.activeKeys) {
      status.activeKeys = null;
      await this.slotRun.record({ state: 'running', stage: 'deploying' });
    }
    return issued;
  }

  /** Deploys the new generation, verifies it works, then waits at the quiet gate for the old key. */
  private async deployAndVerify(b: BeginRotationResult): Promise<Decision> {
    // Once the deploy is sent, consumers may hold the new key whether or not its answer comes (a cancel does not
    // wait for it): a roll-back then redeploys the old key before it revokes the new one. Runs recorded before the
    // patch counted the deploy only once it answered.
    if (this.fewer) this.deployed = true;
    await this.deployGeneration(b.toGeneration, b.fromGeneration, 'keyRotated');
    this.deployed = true;
    const deployedAtMs = Date.now();
    this.status.deployedAt = new Date(deployedAtMs).toISOString();
    await this.slotRun.record({ stage: 'verifying', deployed: true });

    this.slotRun.show('verifying');
    const memory: GateMemory = { deployedAtMs, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    this.memory = memory;
    this.slotRun.lookedAtMs = deployedAtMs;
    if (this.fewer && !this.status.emergency) {
      // The proof and the gate's first look in one step; an emergency looks at nothing.
      const [first] = await this.slotRun.verifyAndLook(
        { generation: b.toGeneration, subaccountId: b.subaccountId },
        [{ keyId: b.oldKeyId, memory }],
        this.status.newKey.keyId!,
      );
      this.status.newKey.status = 'verified';
      return this.passQuietGate(true, first);
    }
    await this.slotRun.platform.verifyTenantKey({
      externalRef: this.externalRef,
      slot: this.slot,
      generation: b.toGeneration,
    });
    this.status.newKey.status = 'verified';
    return this.passQuietGate();
  }

  /** A wait: the deployer is retried until it succeeds (the notify endpoint may be down for long). */
  private deployGeneration(generation: number, otherGeneration: number, event: 'keyRotated' | 'keyRotationAborted') {
    const b = this.slotRun.begun!;
    if (event === 'keyRotated')
      this.slotRun.waitAt('deploying', `the new key's deploy through ${b.deployer.kind} (retried until it succeeds)`);
    else
      this.slotRun.waitAt(
        'rolling_back',
        `the old key's redeploy through ${b.deployer.kind} (retried until it succeeds), then the new key's revoke`,
      );
    return this.slotRun.deploy(b.deployer, {
      rotationId: b.rotationId,
      externalRef: this.externalRef,
      subaccountId: b.subaccountId,
      slot: this.slot,
      generation,
      otherGeneration,
      event,
      emergency: this.status.emergency,
    });
  }

  /**
   * Polls key records until the old key is quiet; held (deadline, late use) waits for an operator.
   * `fresh`: the poll starts again from its base interval (a new gate, or back after a refused revoke).
   * `looked`: the first look, taken with the verify; judged only if nothing decided the gate meanwhile.
   */
  private async passQuietGate(fresh = true, looked?: GateDecision): Promise<Decision> {
    const { status, signals } = this;
    const b = this.slotRun.begun!;
    const memory = this.memory!;
    if (fresh) this.slotRun.backoff = this.slotRun.gateBackoff();
    for (;;) {
      if (status.emergency) {
        status.quietCheck = {
          method: 'skipped-emergency',
          polls: memory.polls,
          oldKeyLastUsedAt: null,
          deployedAtPlatform: null,
          lateUseAt: null,
          quietForMs: 0,
          verdict: 'emergency: quiet period zero',
        };
        return { kind: 'revoke', by: null };
      }
      if (signals.decision) return signals.decision;
      if (this.slotRun.historyFull()) await this.slotRun.continueRun('gate');
      const gate =
        looked ??
        (await this.slotRun.lookAtGate(b.subaccountId, [{ keyId: b.oldKeyId, memory }], status.newKey.keyId!))[0]!;
      looked = undefined;
      status.quietCheck = gate.view;
      if (gate.view.method === 'overlap-window' && !status.notes.some((n) => n.startsWith('no last-use'))) {
        status.notes.push(
          `no last-use information on the platform: waiting the overlap window of ` +
            `${this.slotRun.t.overlapWindow} after deploy instead of a quiet check`,
        );
      }
      if (gate.kind === 'quiet') return { kind: 'revoke', by: null, observed: gate.observed };
      if (gate.kind === 'gone') return { kind: 'revoke', by: null };
      if (gate.kind === 'held') return this.hold(gate);
      const next = (waitMs: number) => `${gate.view.verdict}; next look in ${waitMs} ms`;
      const woken = () => signals.decision !== undefined || status.emergency;
      if (this.slotRun.watches()) {
        const oldKey = { keyId: b.oldKeyId, memory, method: gate.view.method };
        looked = (
          await this.slotRun.watchForQuiet(b.subaccountId, [oldKey], status.newKey.keyId!, true, next, woken)
        )?.[0];
        continue;
      }
      await this.slotRun.waitForQuiet(next, woken);
    }
  }

  /** The gate held (deadline, late use): recorded, shown with the decisions, the fleet told; then held. */
  private async hold(gate: Extract<GateDecision, { kind: 'held' }>): Promise<Decision> {
    this.status.heldReason = gate.reason;
    await this.slotRun.record(
      { state: 'held', stage: 'held', outcome: { heldReason: gate.reason, quietCheck: gate.view } },
      'rotation.held',
    );
    this.slotRun.waitAt(
      'held',
      `${gate.view.verdict}. \`tenantctl rotation revoke-anyway ${this.externalRef} --slot ` +
        `${this.slot} --reason "..."\` (update revokeAnyway) revokes the old ` +
        `key anyway; \`tenantctl rotation abort ...\` (update abortRotation) keeps it and ` +
        `revokes the new key`,
    );
    await this.fleet.tellParent('held');
    return this.holdForDecision();
  }

  /** Held: only a decision (or an escalation to emergency) ends it. */
  private async holdForDecision(): Promise<Decision> {
    await this.slotRun.holdUntil(() => this.signals.decision !== undefined || this.status.emergency);
    await this.slotRun.record({ state: 'running', stage: 'revoking_old' });
    return this.signals.decision ?? { kind: 'revoke', by: null };
  }

  /**
   * Revokes the old key; false when the revoke's own re-read saw a use since the gate passed (nothing was
   * revoked). The point of no return: once the old key's revoke is sent, the rotation finishes even if it
   * is cancelled meanwhile. Rolling back then would redeploy a revoked key, or revoke the new key too and
   * leave the tenant with none (found by the chaos run).
   */
  private async revokeOld(decision: Decision): Promise<boolean> {
    const { status } = this;
    const b = this.slotRun.begun!;
    this.slotRun.show('revoking_old');
    const by = decision.by;
    const why = by
      ? `revoked anyway by ${by.operator}: ${by.reason}`
      : status.emergency
        ? 'emergency rotation'
        : 'quiet';
    // The gate's observation goes to the revoke, which re-reads the key and refuses on any later use.
    const expect = decision.observed ? expectationOf(decision.observed) : null;
    return CancellationScope.nonCancellable(async () => {
      try {
        await this.slotRun.platform.revokeKeyGeneration({
          rotationId: b.rotationId,
          externalRef: this.externalRef,
          subaccountId: b.subaccountId,
          slot: this.slot,
          generation: b.fromGeneration,
          why,
          ...(expect ? { expect } : {}),
        });
      } catch (error) {
        if (expect && isKeyInUseRefusal(error)) return false;
        throw error;
      }
      this.oldRevoked = true;
      status.oldKey.status = 'revoked';
      await this.slotRun.record(
        {
          state: 'completed',
          stage: 'completed',
          outcome: { why, quietCheck: status.quietCheck, notes: status.notes },
        },
        'rotation.completed',
        by?.operator,
      );
      this.slotRun.show('completed');
      await this.fleet.tellParent('completed');
      return true;
    });
  }

  /** Keeps the old key: redeploys it when the new one went out, then revokes every key of the new generation. */
  private async rollBack(outcome: 'aborted' | 'cancelled' | 'failed', why: string, by: OperatorDecision | null) {
    const b = this.slotRun.begun!;
    this.slotRun.show('rolling_back');
    if (this.deployed) await this.deployGeneration(b.fromGeneration, b.toGeneration, 'keyRotationAborted');
    this.slotRun.show('rolling_back');
    const undone = await this.slotRun.platform.revokeNewGeneration({
      rotationId: b.rotationId,
      externalRef: this.externalRef,
      subaccountId: b.subaccountId,
      slot: this.slot,
      generation: b.toGeneration,
      oldGeneration: b.fromGeneration,
      why,
    });
    if (!undone.refused) this.status.newKey.status = 'revoked';
    else this.status.notes.push('the old key was already revoked: the new key was kept as the only key');
    await this.slotRun.record(
      { state: outcome, stage: outcome, outcome: { why, newKeysRevoked: undone.revoked } },
      `rotation.${outcome}`,
      by?.operator,
    );
    this.slotRun.show(outcome);
  }

  /** Abort, cancel or failure before the old key is revoked: roll back (no extra key), never leave the record open. */
  private async settleFailure(error: unknown, cancelled: boolean): Promise<void> {
    const { status } = this;
    status.error = error instanceof Error ? error.message : String(error);
    if (this.slotRun.begun && !this.oldRevoked) {
      try {
        await this.rollBack(cancelled ? 'cancelled' : 'failed', status.error, null);
      } catch (rollBackError) {
        // A close waits for open rotations of its tenant.
        status.notes.push(
          `roll-back failed: ${rollBackError instanceof Error ? rollBackError.message : String(rollBackError)}`,
        );
        await this.slotRun.record(
          { state: 'failed', stage: 'failed', outcome: { why: status.error, rollBackFailed: true } },
          'rotation.failed',
        );
      }
    } else this.slotRun.show(cancelled ? 'cancelled' : 'failed');
    if (!cancelled) await this.fleet.tellParent('failed');
    else await this.fleet.tellParentIfReleased('failed');
  }

  private failed(cancelled: boolean): void {
    const { status } = this;
    recordOutcome(
      'rotation',
      cancelled ? 'cancelled' : 'failed',
      this.startedAtMs,
      {
        externalRef: this.externalRef,
        slot: this.slot,
        rotationId: status.rotationId,
        subaccountId: status.subaccountId,
        stage: status.stage,
      },
      'warn',
    );
  }

  private finished(outcome: 'completed' | 'aborted'): RotateTenantKeyResult {
    const { status } = this;
    const b = this.slotRun.begun!;
    const current = outcome === 'completed' ? status.newKey : status.oldKey;
    recordOutcome('rotation', outcome, this.startedAtMs, {
      externalRef: this.externalRef,
      slot: this.slot,
      rotationId: b.rotationId,
      subaccountId: b.subaccountId,
      emergency: status.emergency,
      keyId: current.keyId,
      revokedKeyId: outcome === 'completed' ? b.oldKeyId : status.newKey.keyId,
    });
    return {
      externalRef: this.externalRef,
      slot: this.slot,
      outcome,
      fromGeneration: b.fromGeneration,
      toGeneration: b.toGeneration,
      keyId: current.keyId!,
      fingerprint: current.fingerprint ?? '',
      revokedKeyId: outcome === 'completed' ? b.oldKeyId : (status.newKey.keyId ?? ''),
      quietCheck: status.quietCheck ?? {
        method: 'last-use',
        polls: 0,
        oldKeyLastUsedAt: null,
        deployedAtPlatform: null,
        lateUseAt: null,
        quietForMs: 0,
        verdict: 'not reached',
      },
    };
  }
}

/** Before the input check: the caller's values as given (a run whose input is refused ends at the check). */
function initialStatus(raw: RotateTenantKeyInput): RotationStatus {
  return {
    externalRef: raw?.externalRef,
    slot: raw?.slot ?? 'default',
    emergency: raw?.emergency ?? false,
    stage: 'starting',
    rotationId: null,
    subaccountId: null,
    fromGeneration: null,
    toGeneration: null,
    oldKey: { keyId: null, fingerprint: null, status: 'active' },
    newKey: { keyId: null, fingerprint: null, status: 'pending' },
    deployer: null,
    deployedAt: null,
    quietCheck: null,
    activeKeys: null,
    heldReason: null,
    waitingFor: null,
    notes: [],
    error: null,
  };
}
