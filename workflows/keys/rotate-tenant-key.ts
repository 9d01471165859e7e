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
import {
  CancellationScope,
  condition,
  ContinueAsNew,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { BeginRotationResult } from '../../activities/keys/rotation.js';
import type { IssueKeyResult } from '../../activities/keys/issue-key.js';
import { rotationWorkflowId, platformTaskQueue } from '../../src/domain/ids.js';
import { msOf } from '../../src/domain/durations.js';
import { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';
import type { ParsedRotateTenantKeyInput, RotateTenantKeyInput } from '../../src/domain/rotation-input.js';
import { validateWorkflowInput } from '../validate-input.js';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';
import {
  evaluateGate,
  expectationOf,
  gateTimingsOf,
  isKeyInUseRefusal,
  type GateMemory,
  type GateTimings,
} from './quiet-gate.js';
import { rotationDetails } from './rotate-tenant-key-details.js';
import { installRotationDecisions, type Decision, type RotationSignals } from './rotate-tenant-key-decisions.js';
import { recordOutcome } from '../outcomes.js';
import {
  rotationSettledSignal,
  rotationStatusQuery,
  type OperatorDecision,
  type RotateTenantKeyResult,
  type RotationStatus,
} from './rotate-tenant-key-messages.js';
import {
  databaseStep,
  notifyDeploy as notifyDeployPolicy,
  platformCall,
  projectEnvDeploy as projectEnvDeployPolicy,
} from '../activity-policies.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';
import { waitForKeySlot } from './key-slot-wait.js';

export * from './rotate-tenant-key-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);
// The notify deployer is retried until the parent's endpoint answers 2xx (no attempt limit).
const notifyDeploy = proxyActivities<Activities>(notifyDeployPolicy);

export async function rotateTenantKey(rawInput: RotateTenantKeyInput): Promise<RotateTenantKeyResult> {
  // The id is the business key: a second start for the same slot then cannot run beside this one.
  const input: ParsedRotateTenantKeyInput = await validateWorkflowInput('rotateTenantKey', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  const { externalRef, slot } = input;
  const carried = input.continued as Carried | undefined;
  const t = { ...DEFAULT_TIMINGS, ...input.options };
  const timings: GateTimings = gateTimingsOf(t);
  const keyLimitRetryMs = msOf(t.keyLimitRetryInterval);
  const pollCeilingMs = input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling);
  const startedAtMs = carried?.startedAtMs ?? workflowInfo().startTime.getTime();
  const platformQueue = platformTaskQueue(workflowInfo().taskQueue);
  const platform = proxyActivities<Activities>(platformCall(platformQueue));
  const projectEnvDeploy = proxyActivities<Activities>(projectEnvDeployPolicy(platformQueue));

  const status: RotationStatus = carried?.status ?? {
    externalRef,
    slot,
    emergency: input.emergency,
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
  const signals: RotationSignals = {
    decision: carried?.decision ?? undefined,
    retry: false,
    aborted() {
      return this.decision?.kind === 'abort';
    },
  };
  setHandler(rotationStatusQuery, () => status);
  const applicable = installRotationDecisions(status, signals);
  const waits = new Waits(
    { tenantStatus: (stage) => `rotation_${stage}`, details: () => rotationDetails(status) },
    carried?.wait ?? null,
  );
  /** A stage the run is not waiting in. */
  const show = (stage: RotationStatus['stage']) => {
    status.stage = stage;
    status.waitingFor = null;
    waits.leave(stage);
  };
  /** A wait: what it waits for, the decisions that apply, and when the run looks again by itself (ms). */
  const waitAt = (stage: RotationStatus['stage'], waitingFor: string, nextCheckInMs: number | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    waits.enter(stage, waitingFor, applicable(), nextCheckInMs);
  };
  const tellParent = (outcome: 'completed' | 'held' | 'key_limit' | 'failed' | 'aborted') => {
    const parent = workflowInfo().parent;
    if (!parent) return Promise.resolve();
    return getExternalWorkflowHandle(parent.workflowId)
      .signal(rotationSettledSignal, { workflowId: workflowInfo().workflowId, outcome })
      .catch(() => undefined);
  };
  if (!carried) {
    upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
    show('starting');
  }

  let begun: BeginRotationResult | undefined = carried?.begun;
  let deployed = carried ? carried.phase !== 'key_limit' : false;
  let oldRevoked = false;
  // The key-limit wait told the fleet (and audited) once; the quiet gate's memory and its previous look.
  let told = carried?.told ?? false;
  let memory: GateMemory | null = carried?.memory ?? null;
  let lookedAtMs: number | null = carried?.lookedAtMs ?? null;
  let backoff = new Backoff(keyLimitRetryMs, pollCeilingMs, carried?.phase === 'key_limit' ? carried.polls : 0);

  /**
   * Continues as new in `phase` with everything the next run needs to answer and decide the same (the
   * status, the wait and its `since`, a decision that landed, the gate's memory): decisions sent to the
   * workflow id land on the next run. Throws ContinueAsNew (let through by the catch below).
   */
  async function continueRun(phase: Carried['phase']): Promise<never> {
    await handlersFinished();
    const next: Carried = {
      phase,
      begun: begun!,
      status,
      wait: waits.current,
      polls: backoff.polls,
      memory,
      lookedAtMs,
      decision: signals.decision ?? null,
      told,
      startedAtMs,
    };
    return continueAsNew<typeof rotateTenantKey>({
      ...rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }
  const record = (change: Parameters<Activities['recordRotation']>[0]['change'], audit?: string, operator?: string) =>
    db.recordRotation({
      rotationId: begun!.rotationId,
      externalRef,
      change,
      ...(audit ? { audit } : {}),
      ...(operator ? { operator } : {}),
    });
  const deploy = (generation: number, otherGeneration: number, event: 'keyRotated' | 'keyRotationAborted') => {
    const acts = begun!.deployer.kind === 'notify' ? notifyDeploy : projectEnvDeploy;
    // A wait: the deployer is retried until it succeeds (the notify endpoint may be down for long).
    if (event === 'keyRotated')
      waitAt('deploying', `the new key's deploy through ${begun!.deployer.kind} (retried until it succeeds)`);
    else
      waitAt(
        'rolling_back',
        `the old key's redeploy through ${begun!.deployer.kind} (retried until it succeeds), then the new key's revoke`,
      );
    return acts.deployKeyGeneration({
      rotationId: begun!.rotationId,
      externalRef,
      subaccountId: begun!.subaccountId,
      slot,
      generation,
      otherGeneration,
      event,
      deployer: begun!.deployer,
      emergency: status.emergency,
    });
  };

  /**
   * Creates the new generation with onboarding's own activity (same key names, same orphan handling).
   * At the tenant's active-key limit the run waits (waitForKeySlot), listing the active keys and which
   * look unused, until an operator frees a slot (retryKeyCreate), aborts, or the slow retry finds room.
   */
  async function waitForFreeKeySlot(
    b: BeginRotationResult,
  ): Promise<Extract<IssueKeyResult, { state: 'issued' }> | 'aborted'> {
    const issued = await waitForKeySlot<IssueKeyResult>({
      waits,
      backoff,
      decisions: signals,
      applicable,
      create: () =>
        platform.issueTenantKey({ externalRef, subaccountId: b.subaccountId, slot, generation: b.toGeneration }),
      atLimit: async (limit, waitMs) => {
        status.activeKeys = limit.activeKeys.map((k) => ({
          ...k,
          isCurrentKeyOfSlot: k.id === b.oldKeyId,
          looksUnused:
            k.id !== b.oldKeyId &&
            k.lastUseKnown &&
            (k.lastUsedAt === null || Date.now() - Date.parse(k.lastUsedAt) > timings.quietPeriodMs),
        }));
        const unused = status.activeKeys.filter((k) => k.looksUnused).map((k) => k.id);
        await record(
          { state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: status.activeKeys } },
          told ? undefined : 'rotation.key_limit',
        );
        if (!told) await tellParent('key_limit');
        told = true;
        status.stage = 'key_limit';
        return (status.waitingFor =
          `the tenant is at its active-key limit (${status.activeKeys.length} active). ` +
          `${unused.length ? `Keys that look unused: ${unused.join(', ')}.` : 'No key looks unused.'} ` +
          (`Revoke one that nobody uses, then \`tenantctl rotation retry-key-create ` +
            `${externalRef} --slot ${slot} --operator <you> --reason "..."\` (update ` +
            `retryKeyCreate); or \`tenantctl rotation abort ...\` (update abortRotation). The ` +
            `key being rotated is in use and is never revoked to make room. The create is tried again by ` +
            `itself in ${waitMs} ms`));
      },
      full: () => historyFull(input.options?.historyEventBound),
      continueAsNew: () => continueRun('key_limit'),
    });
    if (issued !== 'aborted' && status.activeKeys) {
      status.activeKeys = null;
      await record({ state: 'running', stage: 'deploying' });
    }
    return issued;
  }

  /** Keeps the old key: redeploys it when the new one went out, then revokes every key of the new generation. */
  async function rollBack(outcome: 'aborted' | 'cancelled' | 'failed', why: string, by: OperatorDecision | null) {
    const b = begun!;
    show('rolling_back');
    if (deployed) await deploy(b.fromGeneration, b.toGeneration, 'keyRotationAborted');
    show('rolling_back');
    const undone = await platform.revokeNewGeneration({
      rotationId: b.rotationId,
      externalRef,
      subaccountId: b.subaccountId,
      slot,
      generation: b.toGeneration,
      oldGeneration: b.fromGeneration,
      why,
    });
    if (!undone.refused) status.newKey.status = 'revoked';
    else status.notes.push('the old key was already revoked: the new key was kept as the only key');
    await record(
      { state: outcome, stage: outcome, outcome: { why, newKeysRevoked: undone.revoked } },
      `rotation.${outcome}`,
      by?.operator,
    );
    show(outcome);
  }

  try {
    if (!begun)
      begun = await db.beginRotation({
        externalRef,
        slot,
        emergency: input.emergency,
        deployer: input.deployer,
        workflowId: workflowInfo().workflowId,
        runId: workflowInfo().runId,
        reason: input.reason ?? null,
      });
    let decision: Decision;
    if (!carried) {
      Object.assign(status, {
        rotationId: begun.rotationId,
        subaccountId: begun.subaccountId,
        fromGeneration: begun.fromGeneration,
        toGeneration: begun.toGeneration,
        deployer: begun.deployer.kind,
      });
      status.oldKey = { keyId: begun.oldKeyId, fingerprint: begun.oldFingerprint, status: 'active' };
      if (begun.adopted) status.notes.push('took over an open rotation of this slot left by an earlier run');
      show('creating_key');
    }
    if (!carried || carried.phase === 'key_limit') {
      const issued = await waitForFreeKeySlot(begun);
      if (issued === 'aborted') {
        await rollBack('aborted', 'aborted at the active-key limit', signals.decision?.by ?? null);
        return finished('aborted');
      }
      status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint, status: 'issued' };

      await deploy(begun.toGeneration, begun.fromGeneration, 'keyRotated');
      deployed = true;
      const deployedAtMs = Date.now();
      status.deployedAt = new Date(deployedAtMs).toISOString();
      await record({ stage: 'verifying', deployed: true });

      show('verifying');
      await platform.verifyTenantKey({ externalRef, slot, generation: begun.toGeneration });
      status.newKey.status = 'verified';

      memory = { deployedAtMs, deployedAtPlatform: null, lastSeen: null, polls: 0 };
      lookedAtMs = deployedAtMs;
      decision = await passQuietGate(memory);
    } else if (carried.phase === 'gate') {
      backoff = gateBackoff(carried.polls);
      decision = await passQuietGate(memory!, false);
    } else decision = await holdForDecision();
    for (;;) {
      if (decision.kind === 'abort') {
        await rollBack('aborted', decision.by?.reason ?? 'aborted by an operator', decision.by);
        return finished('aborted');
      }

      show('revoking_old');
      const by = decision.by;
      const why = by
        ? `revoked anyway by ${by.operator}: ${by.reason}`
        : status.emergency
          ? 'emergency rotation'
          : 'quiet';
      // The gate's observation goes to the revoke, which re-reads the key and refuses on any later use.
      const expect = decision.observed ? expectationOf(decision.observed) : null;
      // The point of no return: once the old key's revoke is sent, the rotation finishes even if it is
      // cancelled meanwhile. Rolling back then would redeploy a revoked key, or revoke the new key too
      // and leave the tenant with none (found by the chaos run).
      const b = begun;
      const revoked = await CancellationScope.nonCancellable(async () => {
        try {
          await platform.revokeKeyGeneration({
            rotationId: b.rotationId,
            externalRef,
            subaccountId: b.subaccountId,
            slot,
            generation: b.fromGeneration,
            why,
            ...(expect ? { expect } : {}),
          });
        } catch (error) {
          // The revoke's own re-read saw a use since the gate passed: nothing was revoked, not quiet yet.
          if (expect && isKeyInUseRefusal(error)) return false;
          throw error;
        }
        oldRevoked = true;
        status.oldKey.status = 'revoked';
        await record(
          {
            state: 'completed',
            stage: 'completed',
            outcome: { why, quietCheck: status.quietCheck, notes: status.notes },
          },
          'rotation.completed',
          by?.operator,
        );
        show('completed');
        await tellParent('completed');
        return true;
      });
      if (revoked) break;
      status.notes.push(
        `revoke refused at ${new Date().toISOString()}: the old key was used after the ` +
          `quiet gate passed; back to the quiet gate`,
      );
      decision = await passQuietGate(memory!);
    }
    return finished('completed');
  } catch (error) {
    // Continuing as new is not a failure: the next run carries on with this one's state.
    if (error instanceof ContinueAsNew) throw error;
    const cancelled = isCancellation(error);
    status.error = error instanceof Error ? error.message : String(error);
    await CancellationScope.nonCancellable(async () => {
      if (begun && !oldRevoked) {
        try {
          await rollBack(cancelled ? 'cancelled' : 'failed', status.error ?? 'failed', null);
        } catch (rollBackError) {
          // Never leave the record open: a close waits for open rotations of its tenant.
          status.notes.push(
            `roll-back failed: ${rollBackError instanceof Error ? rollBackError.message : String(rollBackError)}`,
          );
          await record(
            { state: 'failed', stage: 'failed', outcome: { why: status.error ?? 'failed', rollBackFailed: true } },
            'rotation.failed',
          );
        }
      } else show(cancelled ? 'cancelled' : 'failed');
      if (!cancelled) await tellParent('failed');
    });
    recordOutcome(
      'rotation',
      cancelled ? 'cancelled' : 'failed',
      startedAtMs,
      { externalRef, slot, rotationId: status.rotationId, subaccountId: status.subaccountId, stage: status.stage },
      'warn',
    );
    throw error;
  }

  /** The quiet gate's poll: from the base interval, backing off to the ceiling; `polls` carried over. */
  function gateBackoff(polls = 0): Backoff {
    return new Backoff(timings.pollIntervalMs, pollCeilingMs, polls);
  }

  /**
   * Polls key records until the old key is quiet; held (deadline, late use) waits for an operator.
   * `fresh`: the poll starts again from its base interval (a new gate, or back after a refused revoke).
   */
  async function passQuietGate(memory: GateMemory, fresh = true): Promise<Decision> {
    const b = begun!;
    if (fresh) backoff = gateBackoff();
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
      if (historyFull(input.options?.historyEventBound)) await continueRun('gate');
      const lookingAtMs = Date.now();
      const usage = await platform.observeKeyUsage({
        subaccountId: b.subaccountId,
        keyIds: [b.oldKeyId, status.newKey.keyId!],
      });
      // A use first seen now happened after the previous look began: the gate judges a late use by the
      // interval actually waited (polls back off), not the configured one.
      const nowMs = Date.now();
      const gate = evaluateGate(memory, usage[b.oldKeyId] ?? null, usage[status.newKey.keyId!] ?? null, nowMs, {
        ...timings,
        pollIntervalMs: nowMs - (lookedAtMs ?? memory.deployedAtMs),
      });
      lookedAtMs = lookingAtMs;
      status.quietCheck = gate.view;
      if (gate.view.method === 'overlap-window' && !status.notes.some((n) => n.startsWith('no last-use'))) {
        status.notes.push(
          `no last-use information on the platform: waiting the overlap window of ` +
            `${t.overlapWindow} after deploy instead of a quiet check`,
        );
      }
      if (gate.kind === 'quiet') return { kind: 'revoke', by: null, observed: gate.observed };
      if (gate.kind === 'gone') return { kind: 'revoke', by: null };
      if (gate.kind === 'held') {
        status.heldReason = gate.reason;
        await record(
          { state: 'held', stage: 'held', outcome: { heldReason: gate.reason, quietCheck: gate.view } },
          'rotation.held',
        );
        waitAt(
          'held',
          `${gate.view.verdict}. \`tenantctl rotation revoke-anyway ${externalRef} --slot ` +
            `${slot} --operator <you> --reason "..."\` (update revokeAnyway) revokes the old ` +
            `key anyway; \`tenantctl rotation abort ...\` (update abortRotation) keeps it and ` +
            `revokes the new key`,
        );
        await tellParent('held');
        return holdForDecision();
      }
      const waitMs = backoff.next();
      waitAt('waiting_for_quiet', `${gate.view.verdict}; next look in ${waitMs} ms`, waitMs);
      await condition(() => signals.decision !== undefined || status.emergency, waitMs);
    }
  }

  /**
   * Held: only a decision (or an escalation to emergency) ends it, so it sets no timer and polls nothing,
   * adding no events while it waits. It re-checks one thing: its history (signals, refused or not, add
   * events), continuing as new past the bound.
   */
  async function holdForDecision(): Promise<Decision> {
    const bound = input.options?.historyEventBound;
    await condition(() => signals.decision !== undefined || status.emergency || historyFull(bound));
    if (signals.decision === undefined && !status.emergency) return continueRun('held');
    await record({ state: 'running', stage: 'revoking_old' });
    return signals.decision ?? { kind: 'revoke', by: null };
  }

  function finished(outcome: 'completed' | 'aborted'): RotateTenantKeyResult {
    const b = begun!;
    const current = outcome === 'completed' ? status.newKey : status.oldKey;
    recordOutcome('rotation', outcome, startedAtMs, {
      externalRef,
      slot,
      rotationId: b.rotationId,
      subaccountId: b.subaccountId,
      emergency: status.emergency,
      keyId: current.keyId,
      revokedKeyId: outcome === 'completed' ? b.oldKeyId : status.newKey.keyId,
    });
    return {
      externalRef,
      slot,
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

/** What a run continued as new hands to the next (never a secret: ids, fingerprints, stages, times, decisions). */
interface Carried {
  /** Where the next run resumes: the key-limit wait, the quiet gate's polls, or held for a decision. */
  phase: 'key_limit' | 'gate' | 'held';
  begun: BeginRotationResult;
  status: RotationStatus;
  wait: WaitView | null;
  /** The current poll's backoff count. */
  polls: number;
  memory: GateMemory | null;
  /** When the gate's previous look began (the interval it judges a late use by runs from there). */
  lookedAtMs: number | null;
  /** A decision that landed and was not yet acted on. */
  decision: Decision | null;
  told: boolean;
  /** The first run's start, for the outcome's duration. */
  startedAtMs: number;
}
