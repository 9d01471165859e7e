/**
 * adoptTenantKeys — why: an imported tenant's keys are `unmanaged` (we never saw their tokens, so we
 * can neither deploy nor rotate them). Adoption gives the slot a managed key and retires the old ones
 * the way a rotation retires its old key: never while a consumer still uses it.
 *
 *   beginAdoption (refuses unknown, closing, inactive; no unmanaged key) ─► issueTenantKey ⟲ (key limit)
 *   ─► deploy ─► verifyTenantKey ─► per unmanaged key: quiet gate ⟲ ─► revokeUnmanagedKey (re-checks use)
 *                                      └► late use / deadline ─► held: revokeAnyway | abortRotation (keep them)
 *
 * Same workflow id as a rotation of the slot (`rotate:<ref>:<slot>`), and a key_rotations row: one open
 * rotation per slot, whichever kind, and a close or drift sees it. Operator decisions are the rotation's
 * Updates, so `tenantctl rotation revoke-anyway|abort|retry-key-create R` answer here too. Tokens never pass
 * through here.
 *
 * Waits (workflows/waits.ts), as a rotation's: key_limit, deploying, waiting_for_quiet and held answer
 * `currentWait` (with the decisions that apply) and set TenantStatus `rotation_<stage>`; the key-limit and
 * quiet-gate polls back off to `pollCeiling`; past `historyEventBound` (or when the SDK suggests it) the run
 * continues as new in its phase with its state (`Carried`). Held polls nothing: only a decision ends it.
 *
 * The run's state is one `Adoption` object (no base class): its query and Updates are installed in its constructor,
 * each decision taken by its own method (`decide`); the steps it takes alike with a rotation are a `SlotRun` it
 * holds (key-slot-run.ts).
 */
import { ApplicationFailure, patched, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { BeginAdoptionResult } from '../../activities/keys/adoption.js';
import type { LastUseExpectation } from '../../activities/keys/rotation.js';
import { FailureCode } from '../../src/domain/failures.js';
import { rotationWorkflowId } from '../../src/domain/ids.js';
import { keyLimitWaitText } from '../../src/domain/key-limit-wait.js';
import type {
  AdoptTenantKeysInput,
  AdoptTenantKeysResult,
  ParsedAdoptTenantKeysInput,
} from '../../src/domain/import-input.js';
import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { databaseStep } from '../activity-policies.js';
import {
  adoptionStatusQuery,
  type AdoptedKeyView,
  type AdoptionStage,
  type AdoptionStatus,
} from './adopt-tenant-keys-messages.js';
import { installDecisions } from '../decision-table.js';
import { expectationOf, isKeyInUseRefusal, type GateDecision, type GateMemory } from './quiet-gate.js';
import { abortRotationUpdate, retryKeyCreateUpdate, revokeAnywayUpdate } from './rotate-tenant-key-messages.js';
import { validateWorkflowInput } from '../validate-input.js';
import { FleetTell, SlotRun, type SlotRunCarried } from './key-slot-run.js';

export * from './adopt-tenant-keys-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);

export async function adoptTenantKeys(rawInput: AdoptTenantKeysInput): Promise<AdoptTenantKeysResult> {
  // Made first, so its Updates are installed before the input check's await (SlotRun, key-slot-run.ts).
  const adoption = new Adoption(rawInput);
  // Asked before the first local activity (a patch asked after one splits differently on replay).
  adoption.deploySentCounts = patched(ADOPTION_DEPLOY_SENT_PATCH);
  adoption.watchesQuietGate();
  const input: ParsedAdoptTenantKeysInput = await validateWorkflowInput('adoptTenantKeys', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  return adoption.run(input);
}

/**
 * 1.0 compatibility: an adoption counts its managed key's deploy as made once it is sent, so a cancel or a failure
 * mid-deploy keeps the key (issue 49's review); runs recorded before it revoked it when the deploy had not answered.
 */
export const ADOPTION_DEPLOY_SENT_PATCH = 'adoption-deploy-counts-when-sent';

const GATE = ['waiting_for_quiet', 'held'] as const;

type AdoptionDecision = { kind: 'revoke' | 'abort'; by: DecisionBy };

/** What a run continued as new hands to the next (never a secret: ids, stages, times, decisions). */
interface Carried extends SlotRunCarried<BeginAdoptionResult, AdoptionStatus> {
  /** The quiet gate's memory per unmanaged key (null before the gate). */
  memories: Array<[string, GateMemory]> | null;
  /** A decision that landed and was not yet acted on. */
  decision: AdoptionDecision | null;
  /** The unmanaged keys revoked so far, in order. */
  revoked: string[];
  deployed: boolean;
  issuedHere: boolean;
}

/** One adoption run: its status, the operator's decisions, and each step of the flow as a method. */
class Adoption {
  private readonly status: AdoptionStatus;
  private readonly carried: Carried | undefined;
  /** The steps it takes alike with a rotation (key-slot-run.ts). */
  private readonly slotRun: SlotRun<AdoptionStage, AdoptionStatus, BeginAdoptionResult, Carried>;
  /** What the fleet that started this run was told. */
  private readonly fleet: FleetTell;
  private readonly applicable: () => readonly string[];
  private deployed: boolean;
  /** Asks QUIET_GATE_WATCH_PATCH now, before any local activity (quiet-watch.ts says why). */
  watchesQuietGate(): void {
    this.slotRun.watches();
  }

  /** ADOPTION_DEPLOY_SENT_PATCH, asked as the run starts. */
  deploySentCounts = false;
  private issuedHere: boolean;
  /** The quiet gate's memory per unmanaged key. */
  private memories: Map<string, GateMemory> | null;
  private readonly revoked: string[];
  private decision: AdoptionDecision | undefined;
  /** retryKeyCreate accepted, and whether an abort was (the key-limit wait reads both). */
  private readonly keySlot = { retry: false, aborted: () => this.decision?.kind === 'abort' };

  constructor(rawInput: AdoptTenantKeysInput) {
    // Any JSON a caller sent: read with care until the check refuses it.
    const carried = (this.carried = rawInput?.continued as Carried | undefined);
    this.status = carried?.status ?? initialStatus(rawInput);
    this.fleet = new FleetTell(carried?.fleetTold ?? 'none');
    this.slotRun = new SlotRun({
      rawInput,
      status: this.status,
      carried,
      details: adoptionDetails,
      carryAlso: () => this.carryAlso(),
      applicable: () => this.applicable(),
      fleet: this.fleet,
      releasesFleetWhileQuiet: false,
    });
    this.deployed = carried?.deployed ?? false;
    this.issuedHere = carried?.issuedHere ?? false;
    this.memories = carried?.memories ? new Map(carried.memories) : null;
    this.revoked = carried?.revoked ?? [];
    this.decision = carried?.decision ?? undefined;
    setHandler(adoptionStatusQuery, () => this.status);
    this.applicable = this.installDecisions();
  }

  private get externalRef(): string {
    return this.status.externalRef;
  }

  private get slot(): string {
    return this.status.slot;
  }

  /** The run, once its input is checked. */
  run(input: ParsedAdoptTenantKeysInput): Promise<AdoptTenantKeysResult> {
    return this.slotRun.run(input, () => this.steps(), {
      settleFailure: (error, cancelled) => this.settleFailure(error, cancelled),
    });
  }

  /** The rotation's Updates, so `tenantctl rotation revoke-anyway|abort|retry-key-create` answer here too. */
  private installDecisions() {
    const { status, keySlot } = this;
    const id = `the adoption of ${status.externalRef} slot ${status.slot}`;
    return installDecisions<AdoptionStage, 'revokeAnyway' | 'abortRotation' | 'retryKeyCreate'>({
      table: { revokeAnyway: GATE, abortRotation: ['key_limit', ...GATE], retryKeyCreate: ['key_limit'] },
      updates: {
        revokeAnyway: revokeAnywayUpdate,
        abortRotation: abortRotationUpdate,
        retryKeyCreate: retryKeyCreateUpdate,
      },
      stage: () => status.stage,
      settled: (name) =>
        name !== 'retryKeyCreate' && this.decision ? `${id} already has a decision: ${this.decision.kind}` : null,
      notAt: (name) =>
        name === 'retryKeyCreate'
          ? `${id} is ${status.stage}: retryKeyCreate applies at key_limit`
          : `${id} is ${status.stage}: ${name} applies while it waits for quiet or is held` +
            (name === 'abortRotation' ? ', or at key_limit' : ''),
      also: (name) =>
        name === 'retryKeyCreate' && keySlot.retry
          ? `${id} is ${status.stage}: retryKeyCreate applies at key_limit`
          : null,
      take: (name, by) => this.decide(name, by),
    });
  }

  /** Takes an accepted decision (its validator checked it applies now) and answers what it does. */
  private decide(name: 'revokeAnyway' | 'abortRotation' | 'retryKeyCreate', by: DecisionBy): string {
    if (name === 'retryKeyCreate') {
      this.keySlot.retry = true;
      return 'the key create is tried again now';
    }
    if (name === 'abortRotation') {
      this.decision ??= { kind: 'abort', by };
      return 'the unmanaged keys still open are kept (unmanaged); the managed key stays';
    }
    this.decision ??= { kind: 'revoke', by };
    return `the unmanaged keys still open are revoked now: ${this.open()
      .map((k) => k.keyId)
      .join(', ')}`;
  }

  private carryAlso() {
    return {
      memories: this.memories ? [...this.memories] : null,
      decision: this.decision ?? null,
      revoked: this.revoked,
      deployed: this.deployed,
      issuedHere: this.issuedHere,
    };
  }

  /** The unmanaged keys not yet revoked or kept. */
  private open(): AdoptedKeyView[] {
    return this.status.keys.filter((k) => k.state === 'waiting' || k.state === 'held');
  }

  private waiting(): AdoptedKeyView[] {
    return this.status.keys.filter((k) => k.state === 'waiting');
  }

  private async steps(): Promise<AdoptTenantKeysResult> {
    const { carried, status } = this;
    const b = (this.slotRun.begun ??= await this.begin());
    // A continued run resumes in its phase: past the key-limit wait, the key is issued, deployed and verified.
    if (!carried && b.issue) this.slotRun.show('creating_key');
    if (b.issue && (!carried || carried.phase === 'key_limit')) await this.issueAndDeploy(b);
    else if (!carried) {
      status.newKey = { ...b.managedKey! };
      status.notes.push('the slot already has its managed key (an earlier adoption): not issued again');
    }
    this.memories ??= new Map<string, GateMemory>(
      status.keys.map((k) => [
        k.keyId,
        { deployedAtMs: Date.now(), deployedAtPlatform: null, lastSeen: null, polls: 0 },
      ]),
    );
    const resumedAt = carried?.phase === 'gate' || carried?.phase === 'held' ? carried.phase : null;
    if (resumedAt === 'gate') this.slotRun.backoff = this.slotRun.gateBackoff(carried!.polls);
    else if (!resumedAt) {
      this.slotRun.backoff = this.slotRun.gateBackoff();
      await this.slotRun.record({ state: 'running', stage: 'waiting_for_quiet' });
    }
    if (resumedAt !== 'held') await this.passQuietGate(b, this.memories);
    await this.holdWhileInUse(resumedAt === 'held');
    return this.settle();
  }

  private async begin(): Promise<BeginAdoptionResult> {
    const begun = await db.beginAdoption(this.slotRun.beginInput());
    this.status.rotationId = begun.rotationId;
    this.status.keys = begun.unmanaged.map((k): AdoptedKeyView => ({
      ...k,
      state: 'waiting',
      heldReason: null,
      quietCheck: null,
    }));
    return begun;
  }

  /** The managed key: created (waiting at the key limit), deployed and verified. */
  private async issueAndDeploy(b: BeginAdoptionResult): Promise<void> {
    const { externalRef, slot, status } = this;
    const issued = await this.slotRun.createKey(
      this.keySlot,
      async (limit, waitMs) => {
        await this.slotRun.record({
          state: 'key_limit',
          stage: 'key_limit',
          outcome: { activeKeys: limit.activeKeys },
        });
        return this.slotRun.atKeyLimit(
          keyLimitWaitText({
            run: { kind: 'rotation', externalRef, slot },
            activeKeys: limit.activeKeys,
            retryInMs: waitMs,
          }),
        );
      },
      () => this.slotRun.record({ state: 'running', stage: 'creating_key' }),
    );
    if (issued !== 'aborted') {
      this.issuedHere = true;
      status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint };
    }
    // Read again, not narrowed: a decision lands while the run awaits.
    const decision = this.decision as AdoptionDecision | undefined;
    if (decision?.kind === 'abort') {
      const { by } = decision;
      await this.slotRun.record({ state: 'aborted', stage: 'aborted' }, 'rotation.aborted', by.operator);
      this.slotRun.show('aborted');
      throw ApplicationFailure.create({
        type: FailureCode.ROTATION_ABORTED,
        message: `aborted at the key limit by ${by.operator}: nothing was issued or revoked`,
        nonRetryable: true,
      });
    }
    this.slotRun.waitAt('deploying', `the managed key's deploy through ${b.deployer.kind} (retried until it succeeds)`);
    // Once its notice is sent, consumers may hold the managed key whether or not the answer comes (a cancel does not
    // wait for it): a failure or a cancel from here keeps the key.
    if (this.deploySentCounts) this.deployed = true;
    await this.slotRun.deploy(b.deployer, {
      rotationId: b.rotationId,
      externalRef,
      subaccountId: b.subaccountId,
      slot,
      generation: b.toGeneration,
      otherGeneration: b.fromGeneration,
      event: 'keyRotated',
      emergency: false,
    });
    this.deployed = true;
    await this.slotRun.record({ stage: 'verifying', deployed: true });
    this.slotRun.show('verifying');
    await this.slotRun.platform.verifyTenantKey({ externalRef, slot, generation: b.toGeneration });
  }

  /** Polls every unmanaged key still waiting: a quiet one is revoked, a late use or the deadline holds it. */
  private async passQuietGate(b: BeginAdoptionResult, memories: Map<string, GateMemory>): Promise<void> {
    // What a watch answered for the keys still waiting (judged already: its looks count as the next look). Only this
    // loop changes which keys wait, and a decision ends it: the next turn's keys are the ones watched.
    let looked: GateDecision[] | undefined;
    while (!this.decision && this.waiting().length > 0) {
      if (this.slotRun.historyFull()) await this.slotRun.continueRun('gate');
      const waiting = this.waiting();
      const gates =
        looked ??
        (await this.slotRun.lookAtGate(
          b.subaccountId,
          waiting.map((k) => ({ keyId: k.keyId, memory: memories.get(k.keyId)! })),
          this.status.newKey.keyId!,
          // The managed key's first use is deploy time on the platform's clock only when this run deployed it;
          // an earlier adoption's key was used long ago, so this run measures from its own start instead.
          b.issue,
        ));
      looked = undefined;
      for (const [i, key] of waiting.entries()) {
        const gate = gates[i]!;
        key.quietCheck = gate.view;
        if (gate.kind === 'quiet') await this.revoke(key, 'quiet', expectationOf(gate.observed));
        else if (gate.kind === 'gone') await this.revoke(key, 'gone on the platform', null);
        else if (gate.kind === 'held') {
          key.state = 'held';
          key.heldReason = gate.reason;
        }
      }
      if (this.waiting().length === 0) break;
      const next = (waitMs: number) =>
        `quiet gate of ${this.waiting().length} unmanaged key(s); next look in ${waitMs} ms`;
      const woken = () => this.decision !== undefined;
      if (this.slotRun.watches()) {
        const keys = this.waiting().map((k) => ({
          keyId: k.keyId,
          memory: memories.get(k.keyId)!,
          method: k.quietCheck!.method,
        }));
        looked =
          (await this.slotRun.watchForQuiet(b.subaccountId, keys, this.status.newKey.keyId!, b.issue, next, woken)) ??
          undefined;
        continue;
      }
      await this.slotRun.waitForQuiet(next, woken);
    }
  }

  /** Keys still in use and no decision: recorded, shown, the fleet told (once), then held for a decision. */
  private async holdWhileInUse(resumedHeld: boolean): Promise<void> {
    const held = this.open();
    if (!held.length || this.decision) return;
    if (!resumedHeld) {
      await this.slotRun.record(
        {
          state: 'held',
          stage: 'held',
          outcome: { held: held.map((k) => ({ keyId: k.keyId, reason: k.heldReason })) },
        },
        'rotation.held',
      );
      this.slotRun.waitAt(
        'held',
        `unmanaged key(s) still in use: ${held.map((k) => `${k.keyId} (${k.heldReason})`).join(', ')}. ` +
          (`\`tenantctl rotation revoke-anyway ${this.externalRef} --slot ${this.slot} ` +
            `--reason "..."\` revokes them; \`tenantctl rotation abort ...\` keeps them ` +
            `unmanaged`),
      );
      await this.fleet.tellParent('held');
    }
    await this.slotRun.holdUntil(() => this.decision !== undefined);
  }

  /** Revokes what a revokeAnyway asked for, keeps the rest unmanaged, and records the outcome. */
  private async settle(): Promise<AdoptTenantKeysResult> {
    const { status, decision } = this;
    if (decision?.kind === 'revoke')
      for (const key of this.open())
        await this.revoke(
          key,
          `revoked anyway by ${decision.by.operator}: ${decision.by.reason}`,
          null,
          decision.by.operator,
        );
    const kept = this.open().map((k) => k.keyId);
    for (const key of this.open()) key.state = 'kept';
    const outcome = kept.length ? 'aborted' : 'completed';
    await this.slotRun.record(
      { state: outcome, stage: outcome, outcome: { revoked: this.revoked, kept, notes: status.notes } },
      `rotation.${outcome}`,
      decision?.by.operator,
    );
    this.slotRun.show(outcome);
    return {
      externalRef: this.externalRef,
      slot: this.slot,
      outcome,
      keyId: status.newKey.keyId!,
      fingerprint: status.newKey.fingerprint ?? '',
      revoked: this.revoked,
      kept,
    };
  }

  /** Revokes one unmanaged key; a use the revoke's own re-read sees since its gate passed sends it back to the gate. */
  private async revoke(key: AdoptedKeyView, why: string, expect: LastUseExpectation | null, operator?: string) {
    const b = this.slotRun.begun!;
    try {
      await this.slotRun.platform.revokeUnmanagedKey({
        rotationId: b.rotationId,
        externalRef: this.externalRef,
        subaccountId: b.subaccountId,
        keyId: key.keyId,
        why,
        ...(operator ? { operator } : {}),
        ...(expect ? { expect } : {}),
      });
    } catch (error) {
      if (expect && isKeyInUseRefusal(error)) {
        this.status.notes.push(`revoke of ${key.keyId} refused: used after its gate passed; back to the quiet gate`);
        return;
      }
      throw error;
    }
    key.state = 'revoked';
    this.revoked.push(key.keyId);
  }

  /** A managed key that never went out is taken back; once deployed, consumers may hold it: it stays. */
  private async settleFailure(error: unknown, cancelled: boolean): Promise<void> {
    const b = this.slotRun.begun;
    if (!b || this.status.stage === 'aborted') return;
    if (this.issuedHere && !this.deployed)
      await this.slotRun.platform.revokeKeyGeneration({
        rotationId: b.rotationId,
        externalRef: this.externalRef,
        subaccountId: b.subaccountId,
        slot: this.slot,
        generation: b.toGeneration,
        why: cancelled ? 'adoption cancelled before deploy' : 'adoption failed before deploy',
      });
    const state = cancelled ? 'cancelled' : 'failed';
    await this.slotRun.record(
      {
        state,
        stage: state,
        outcome: { revoked: this.revoked, why: error instanceof Error ? error.message : String(error) },
      },
      `rotation.${state}`,
    );
    this.slotRun.show(state);
  }
}

/** Before the input check: the caller's values as given (a run whose input is refused ends at the check). */
function initialStatus(raw: AdoptTenantKeysInput): AdoptionStatus {
  return {
    externalRef: raw?.externalRef,
    slot: raw?.slot ?? 'default',
    stage: 'starting',
    rotationId: null,
    newKey: { keyId: null, fingerprint: null },
    keys: [],
    notes: [],
    waitingFor: null,
  };
}

/** The run's own lines in the Web UI's current details, under its wait. */
function adoptionDetails(status: AdoptionStatus): string[] {
  const lines = [
    `**${status.stage}** — adopting key slot \`${status.slot}\` of tenant \`${status.externalRef}\``,
    `managed key: ${status.newKey.keyId ?? 'not yet created'} ${status.newKey.fingerprint ?? ''}`,
  ];
  for (const k of status.keys)
    lines.push(
      `unmanaged key ${k.keyId}: ${k.state}${k.heldReason ? ` (${k.heldReason})` : ''}` +
        `${k.quietCheck ? `: ${k.quietCheck.verdict}` : ''}`,
    );
  for (const note of status.notes) lines.push(`note: ${note}`);
  return lines;
}
