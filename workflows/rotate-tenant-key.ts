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
 * One run per tenant slot: the workflow id is `rotate:<externalRef>:<slot>` and the records allow
 * one open rotation per slot. Platform-calling activities run on the platform task queue, whose
 * Temporal rate limit paces the whole fleet. Tokens never pass through here.
 */
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { BeginRotationResult } from '../activities/rotation.js';
import type { IssueKeyResult } from '../activities/keys.js';
import { rotationWorkflowId, platformTaskQueue } from '../src/domain/ids.js';
import { msOf } from '../src/domain/durations.js';
import { DEFAULT_TIMINGS } from '../src/domain/rotation-defaults.js';
import type { ParsedRotateTenantKeyInput, RotateTenantKeyInput } from '../src/domain/rotation-input.js';
import { validateWorkflowInput } from './validate-input.js';
import { tenantExternalRefKey } from '../src/domain/search-attributes.js';
import {
  evaluateGate,
  expectationOf,
  gateTimingsOf,
  isKeyInUseRefusal,
  type GateMemory,
  type GateTimings,
} from './rotate-tenant-key-gate.js';
import { describeRotation } from './rotate-tenant-key-details.js';
import { installRotationDecisions, type Decision, type RotationSignals } from './rotate-tenant-key-decisions.js';
import { recordOutcome } from './outcomes.js';
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
} from './activity-policies.js';

export * from './rotate-tenant-key-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);
// The notify deployer is retried until the parent's endpoint answers 2xx (no attempt limit).
const notifyDeploy = proxyActivities<Activities>(notifyDeployPolicy);

/** New runs hand the gate's observation to the revoke, which re-reads the key and refuses on any later use. */
const REVOKE_RECHECK_PATCH = 'revoke-rechecks-last-use';

export async function rotateTenantKey(rawInput: RotateTenantKeyInput): Promise<RotateTenantKeyResult> {
  // The id is the business key: a second start for the same slot then cannot run beside this one.
  const input: ParsedRotateTenantKeyInput = await validateWorkflowInput('rotateTenantKey', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  const { externalRef, slot } = input;
  const t = { ...DEFAULT_TIMINGS, ...input.options };
  const timings: GateTimings = gateTimingsOf(t);
  const keyLimitRetryMs = msOf(t.keyLimitRetryInterval);
  const platformQueue = platformTaskQueue(workflowInfo().taskQueue);
  const platform = proxyActivities<Activities>(platformCall(platformQueue));
  const projectEnvDeploy = proxyActivities<Activities>(projectEnvDeployPolicy(platformQueue));

  const status: RotationStatus = {
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
  const signals: RotationSignals = { decision: undefined, retryCreate: false };
  setHandler(rotationStatusQuery, () => status);
  installRotationDecisions(status, signals);
  const show = (stage: RotationStatus['stage'], waitingFor: string | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    describeRotation(status);
  };
  const tellParent = (outcome: 'completed' | 'held' | 'key_limit' | 'failed' | 'aborted') => {
    const parent = workflowInfo().parent;
    if (!parent) return Promise.resolve();
    return getExternalWorkflowHandle(parent.workflowId)
      .signal(rotationSettledSignal, { workflowId: workflowInfo().workflowId, outcome })
      .catch(() => undefined);
  };
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);
  show('starting');

  let begun: BeginRotationResult | undefined;
  let deployed = false;
  let oldRevoked = false;
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
   * At the tenant's active-key limit the run waits, listing the active keys and which look unused,
   * until an operator frees a slot (retryKeyCreate), aborts, or the slow retry finds room. It never
   * revokes a key itself to make room: only an operator knows which key nobody needs.
   */
  async function waitForFreeKeySlot(
    b: BeginRotationResult,
  ): Promise<Extract<IssueKeyResult, { state: 'issued' }> | 'aborted'> {
    let told = false;
    for (;;) {
      const issued = await platform.issueTenantKey({
        externalRef,
        subaccountId: b.subaccountId,
        slot,
        generation: b.toGeneration,
      });
      if (issued.state === 'issued') {
        if (status.activeKeys) {
          status.activeKeys = null;
          await record({ state: 'running', stage: 'deploying' });
        }
        return issued;
      }
      status.activeKeys = issued.activeKeys.map((k) => ({
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
      show(
        'key_limit',
        `the tenant is at its active-key limit (${status.activeKeys.length} active). ` +
          `${unused.length ? `Keys that look unused: ${unused.join(', ')}.` : 'No key looks unused.'} ` +
          (`Revoke one that nobody uses, then \`tenantctl rotation retry-key-create ` +
            `${externalRef} --slot ${slot} --operator <you> --reason "..."\` (update ` +
            `retryKeyCreate); or \`tenantctl rotation abort ...\` (update abortRotation). The ` +
            `key being rotated is in use and is never revoked to make room`),
      );
      if (!told) await tellParent('key_limit');
      told = true;
      signals.retryCreate = false;
      await condition(() => signals.retryCreate || signals.decision?.kind === 'abort', keyLimitRetryMs);
      if (signals.decision?.kind === 'abort') return 'aborted';
    }
  }

  /** Keeps the old key: redeploys it when the new one went out, then revokes every key of the new generation. */
  async function rollBack(outcome: 'aborted' | 'cancelled' | 'failed', why: string, by: OperatorDecision | null) {
    const b = begun!;
    show('rolling_back');
    if (deployed) await deploy(b.fromGeneration, b.toGeneration, 'keyRotationAborted');
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
    begun = await db.beginRotation({
      externalRef,
      slot,
      emergency: input.emergency,
      deployer: input.deployer,
      workflowId: workflowInfo().workflowId,
      runId: workflowInfo().runId,
      reason: input.reason ?? null,
    });
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
    const issued = await waitForFreeKeySlot(begun);
    if (issued === 'aborted') {
      await rollBack('aborted', 'aborted at the active-key limit', signals.decision?.by ?? null);
      return finished('aborted');
    }
    status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint, status: 'issued' };

    show('deploying', `deploying the new key through ${begun.deployer.kind} (retried until it succeeds)`);
    await deploy(begun.toGeneration, begun.fromGeneration, 'keyRotated');
    deployed = true;
    const deployedAtMs = Date.now();
    status.deployedAt = new Date(deployedAtMs).toISOString();
    await record({ stage: 'verifying', deployed: true });

    show('verifying');
    await platform.verifyTenantKey({ externalRef, slot, generation: begun.toGeneration });
    status.newKey.status = 'verified';

    const memory: GateMemory = { deployedAtMs, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    let decision = await passQuietGate(memory);
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
      const expect = decision.observed && patched(REVOKE_RECHECK_PATCH) ? expectationOf(decision.observed) : null;
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
      decision = await passQuietGate(memory);
    }
    return finished('completed');
  } catch (error) {
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
      workflowInfo().startTime.getTime(),
      { externalRef, slot, rotationId: status.rotationId, subaccountId: status.subaccountId, stage: status.stage },
      'warn',
    );
    throw error;
  }

  /** Polls key records until the old key is quiet; held (deadline, late use) waits for an operator. */
  async function passQuietGate(memory: GateMemory): Promise<Decision> {
    const b = begun!;
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
      const usage = await platform.observeKeyUsage({
        subaccountId: b.subaccountId,
        keyIds: [b.oldKeyId, status.newKey.keyId!],
      });
      const gate = evaluateGate(
        memory,
        usage[b.oldKeyId] ?? null,
        usage[status.newKey.keyId!] ?? null,
        Date.now(),
        timings,
      );
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
        show(
          'held',
          `${gate.view.verdict}. \`tenantctl rotation revoke-anyway ${externalRef} --slot ` +
            `${slot} --operator <you> --reason "..."\` (update revokeAnyway) revokes the old ` +
            `key anyway; \`tenantctl rotation abort ...\` (update abortRotation) keeps it and ` +
            `revokes the new key`,
        );
        await tellParent('held');
        await condition(() => signals.decision !== undefined || status.emergency);
        await record({ state: 'running', stage: 'revoking_old' });
        return signals.decision ?? { kind: 'revoke', by: null };
      }
      show('waiting_for_quiet', `${gate.view.verdict}; next look in ${t.pollInterval}`);
      await condition(() => signals.decision !== undefined || status.emergency, timings.pollIntervalMs);
    }
  }

  function finished(outcome: 'completed' | 'aborted'): RotateTenantKeyResult {
    const b = begun!;
    const current = outcome === 'completed' ? status.newKey : status.oldKey;
    recordOutcome('rotation', outcome, workflowInfo().startTime.getTime(), {
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
