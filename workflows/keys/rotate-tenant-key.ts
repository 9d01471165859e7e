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
 */
import { CancellationScope, proxyLocalActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { BeginRotationResult } from '../../activities/keys/rotation.js';
import type { IssueKeyResult } from '../../activities/keys/issue-key.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import { keyLimitWaitText } from '../../src/domain/key-limit-wait.js';
import type { ParsedRotateTenantKeyInput, RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { expectationOf, isKeyInUseRefusal, type GateDecision, type GateMemory } from './quiet-gate.js';
import { rotationDetails } from './rotate-tenant-key-details.js';
import { installRotationDecisions, type Decision, type RotationSignals } from './rotate-tenant-key-decisions.js';
import { recordOutcome } from '../outcomes.js';
import {
  rotationStatusQuery,
  type OperatorDecision,
  type RotateTenantKeyResult,
  type RotationStage,
  type RotationStatus,
} from './rotate-tenant-key-messages.js';
import { databaseStep } from '../activity-policies.js';
import { KeySlotRun, type SlotRunCarried } from './key-slot-run.js';

export * from './rotate-tenant-key-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);

export async function rotateTenantKey(rawInput: RotateTenantKeyInput): Promise<RotateTenantKeyResult> {
  // Made first, so its Updates are installed before the input check's await (key-slot-run.ts).
  const rotation = new Rotation(rawInput);
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
class Rotation extends KeySlotRun<RotationStage, RotationStatus, BeginRotationResult, Carried, RotateTenantKeyResult> {
  private readonly signals: RotationSignals;
  // Its quiet gate waits an hour and more by default: the fleet that started it need not count it meanwhile.
  protected override readonly releasesFleetWhileQuiet = true;
  private readonly startedAtMs: number;
  private deployed: boolean;
  private oldRevoked = false;
  private told: boolean;
  private memory: GateMemory | null;

  private input!: ParsedRotateTenantKeyInput;

  constructor(rawInput: RotateTenantKeyInput) {
    // Any JSON a caller sent: read with care until the check refuses it.
    const carried = rawInput?.continued as Carried | undefined;
    super(rawInput, carried?.status ?? initialStatus(rawInput), carried, rotationDetails);
    this.startedAtMs = carried?.startedAtMs ?? workflowInfo().startTime.getTime();
    this.deployed = carried ? carried.phase !== 'key_limit' : false;
    this.told = carried?.told ?? false;
    this.memory = carried?.memory ?? null;
    // A run continued before the fleet patch carries no fleetTold: one that told held (or its key limit) was counted.
    if (carried && carried.fleetTold === undefined && (carried.told || carried.status?.heldReason))
      this.fleetTold = 'held';
    this.signals = {
      decision: carried?.decision ?? undefined,
      retry: false,
      aborted() {
        return this.decision?.kind === 'abort';
      },
    };
    setHandler(rotationStatusQuery, () => this.status);
    this.applicable = installRotationDecisions(this.status, this.signals);
  }

  override run(input: ParsedRotateTenantKeyInput): Promise<RotateTenantKeyResult> {
    this.input = input;
    return super.run(input);
  }

  protected carryAlso() {
    return {
      memory: this.memory,
      decision: this.signals.decision ?? null,
      told: this.told,
      startedAtMs: this.startedAtMs,
    };
  }

  protected async steps(): Promise<RotateTenantKeyResult> {
    const { carried } = this;
    if (!carried) this.show('starting');
    const b = (this.begun ??= await db.beginRotation({ ...this.beginInput(), emergency: this.input.emergency }));
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
      this.backoff = this.gateBackoff(carried.polls);
      decision = await this.passQuietGate(false);
    } else decision = await this.holdForDecision();
    for (;;) {
      if (decision.kind === 'abort') {
        await this.rollBack('aborted', decision.by?.reason ?? 'aborted by an operator', decision.by);
        await this.tellParentIfReleased('aborted');
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
    this.show('creating_key');
  }

  /**
   * The new generation (the base's createKey): at the limit the wait lists the active keys and which look
   * unused; the key being rotated is in use and is never a candidate to make room.
   */
  private async issueKey(b: BeginRotationResult): Promise<Extract<IssueKeyResult, { state: 'issued' }> | 'aborted'> {
    const { status, externalRef, slot } = this;
    const issued = await this.createKey(this.signals, async (limit, waitMs) => {
      status.activeKeys = limit.activeKeys.map((k) => ({
        ...k,
        isCurrentKeyOfSlot: k.id === b.oldKeyId,
        looksUnused:
          k.id !== b.oldKeyId &&
          k.lastUseKnown &&
          (k.lastUsedAt === null || Date.now() - Date.parse(k.lastUsedAt) > this.timings.quietPeriodMs),
      }));
      const unused = status.activeKeys.filter((k) => k.looksUnused).map((k) => k.id);
      await this.record(
        { state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: status.activeKeys } },
        this.told ? undefined : 'rotation.key_limit',
      );
      if (!this.told) await this.tellParent('key_limit');
      this.told = true;
      return this.atKeyLimit(
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
      await this.record({ state: 'running', stage: 'deploying' });
    }
    return issued;
  }

  /** Deploys the new generation, verifies it works, then waits at the quiet gate for the old key. */
  private async deployAndVerify(b: BeginRotationResult): Promise<Decision> {
    await this.deployGeneration(b.toGeneration, b.fromGeneration, 'keyRotated');
    this.deployed = true;
    const deployedAtMs = Date.now();
    this.status.deployedAt = new Date(deployedAtMs).toISOString();
    await this.record({ stage: 'verifying', deployed: true });

    this.show('verifying');
    await this.platform.verifyTenantKey({ externalRef: this.externalRef, slot: this.slot, generation: b.toGeneration });
    this.status.newKey.status = 'verified';

    this.memory = { deployedAtMs, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    this.lookedAtMs = deployedAtMs;
    return this.passQuietGate();
  }

  /** A wait: the deployer is retried until it succeeds (the notify endpoint may be down for long). */
  private deployGeneration(generation: number, otherGeneration: number, event: 'keyRotated' | 'keyRotationAborted') {
    const b = this.begun!;
    if (event === 'keyRotated')
      this.waitAt('deploying', `the new key's deploy through ${b.deployer.kind} (retried until it succeeds)`);
    else
      this.waitAt(
        'rolling_back',
        `the old key's redeploy through ${b.deployer.kind} (retried until it succeeds), then the new key's revoke`,
      );
    return this.deploy(b.deployer, {
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
   */
  private async passQuietGate(fresh = true): Promise<Decision> {
    const { status, signals } = this;
    const b = this.begun!;
    const memory = this.memory!;
    if (fresh) this.backoff = this.gateBackoff();
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
      if (this.historyFull()) await this.continueRun('gate');
      const gate = (await this.lookAtGate(b.subaccountId, [{ keyId: b.oldKeyId, memory }], status.newKey.keyId!))[0]!;
      status.quietCheck = gate.view;
      if (gate.view.method === 'overlap-window' && !status.notes.some((n) => n.startsWith('no last-use'))) {
        status.notes.push(
          `no last-use information on the platform: waiting the overlap window of ` +
            `${this.t.overlapWindow} after deploy instead of a quiet check`,
        );
      }
      if (gate.kind === 'quiet') return { kind: 'revoke', by: null, observed: gate.observed };
      if (gate.kind === 'gone') return { kind: 'revoke', by: null };
      if (gate.kind === 'held') return this.hold(gate);
      await this.waitForQuiet(
        (waitMs) => `${gate.view.verdict}; next look in ${waitMs} ms`,
        () => signals.decision !== undefined || status.emergency,
      );
    }
  }

  /** The gate held (deadline, late use): recorded, shown with the decisions, the fleet told; then held. */
  private async hold(gate: Extract<GateDecision, { kind: 'held' }>): Promise<Decision> {
    this.status.heldReason = gate.reason;
    await this.record(
      { state: 'held', stage: 'held', outcome: { heldReason: gate.reason, quietCheck: gate.view } },
      'rotation.held',
    );
    this.waitAt(
      'held',
      `${gate.view.verdict}. \`tenantctl rotation revoke-anyway ${this.externalRef} --slot ` +
        `${this.slot} --reason "..."\` (update revokeAnyway) revokes the old ` +
        `key anyway; \`tenantctl rotation abort ...\` (update abortRotation) keeps it and ` +
        `revokes the new key`,
    );
    await this.tellParent('held');
    return this.holdForDecision();
  }

  /** Held: only a decision (or an escalation to emergency) ends it. */
  private async holdForDecision(): Promise<Decision> {
    await this.holdUntil(() => this.signals.decision !== undefined || this.status.emergency);
    await this.record({ state: 'running', stage: 'revoking_old' });
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
    const b = this.begun!;
    this.show('revoking_old');
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
        await this.platform.revokeKeyGeneration({
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
      await this.record(
        {
          state: 'completed',
          stage: 'completed',
          outcome: { why, quietCheck: status.quietCheck, notes: status.notes },
        },
        'rotation.completed',
        by?.operator,
      );
      this.show('completed');
      await this.tellParent('completed');
      return true;
    });
  }

  /** Keeps the old key: redeploys it when the new one went out, then revokes every key of the new generation. */
  private async rollBack(outcome: 'aborted' | 'cancelled' | 'failed', why: string, by: OperatorDecision | null) {
    const b = this.begun!;
    this.show('rolling_back');
    if (this.deployed) await this.deployGeneration(b.fromGeneration, b.toGeneration, 'keyRotationAborted');
    this.show('rolling_back');
    const undone = await this.platform.revokeNewGeneration({
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
    await this.record(
      { state: outcome, stage: outcome, outcome: { why, newKeysRevoked: undone.revoked } },
      `rotation.${outcome}`,
      by?.operator,
    );
    this.show(outcome);
  }

  /** Abort, cancel or failure before the old key is revoked: roll back (no extra key), never leave the record open. */
  protected async settleFailure(error: unknown, cancelled: boolean): Promise<void> {
    const { status } = this;
    status.error = error instanceof Error ? error.message : String(error);
    if (this.begun && !this.oldRevoked) {
      try {
        await this.rollBack(cancelled ? 'cancelled' : 'failed', status.error, null);
      } catch (rollBackError) {
        // A close waits for open rotations of its tenant.
        status.notes.push(
          `roll-back failed: ${rollBackError instanceof Error ? rollBackError.message : String(rollBackError)}`,
        );
        await this.record(
          { state: 'failed', stage: 'failed', outcome: { why: status.error, rollBackFailed: true } },
          'rotation.failed',
        );
      }
    } else this.show(cancelled ? 'cancelled' : 'failed');
    if (!cancelled) await this.tellParent('failed');
    else await this.tellParentIfReleased('failed');
  }

  protected override failed(_error: unknown, cancelled: boolean): void {
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
    const b = this.begun!;
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
