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
 */
import {
  ApplicationFailure,
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
import type { BeginAdoptionResult } from '../../activities/keys/adoption.js';
import type { LastUseExpectation } from '../../activities/keys/rotation.js';
import { msOf } from '../../src/domain/durations.js';
import { FailureCode } from '../../src/domain/failures.js';
import { platformTaskQueue, rotationWorkflowId } from '../../src/domain/ids.js';
import type {
  AdoptTenantKeysInput,
  AdoptTenantKeysResult,
  ParsedAdoptTenantKeysInput,
} from '../../src/domain/import-input.js';
import type { DecisionBy } from '../../src/domain/operator-decisions.js';
import { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';
import {
  databaseStep,
  notifyDeploy as notifyDeployPolicy,
  platformCall,
  projectEnvDeploy,
} from '../activity-policies.js';
import {
  adoptionStatusQuery,
  type AdoptedKeyView,
  type AdoptionStage,
  type AdoptionStatus,
} from './adopt-tenant-keys-messages.js';
import { installDecisions } from './decision-table.js';
import {
  evaluateGate,
  expectationOf,
  gateTimingsOf,
  isKeyInUseRefusal,
  type GateMemory,
  type GateTimings,
} from './quiet-gate.js';
import {
  abortRotationUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
  rotationSettledSignal,
} from './rotate-tenant-key-messages.js';
import { validateWorkflowInput } from '../validate-input.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';
import { waitForKeySlot } from './key-slot-wait.js';

export * from './adopt-tenant-keys-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);
const notify = proxyActivities<Activities>(notifyDeployPolicy);

export async function adoptTenantKeys(rawInput: AdoptTenantKeysInput): Promise<AdoptTenantKeysResult> {
  const input: ParsedAdoptTenantKeysInput = await validateWorkflowInput('adoptTenantKeys', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  const { externalRef, slot } = input;
  const carried = input.continued as Carried | undefined;
  const t = { ...DEFAULT_TIMINGS, ...input.options };
  const timings: GateTimings = gateTimingsOf(t);
  const pollCeilingMs = input.options?.pollCeiling === undefined ? undefined : msOf(input.options.pollCeiling);
  const bound = input.options?.historyEventBound;
  const queue = platformTaskQueue(workflowInfo().taskQueue);
  const platform = proxyActivities<Activities>(platformCall(queue));
  const projectEnv = proxyActivities<Activities>(projectEnvDeploy(queue));

  const status: AdoptionStatus = carried?.status ?? {
    externalRef,
    slot,
    stage: 'starting',
    rotationId: null,
    newKey: { keyId: null, fingerprint: null },
    keys: [],
    notes: [],
    waitingFor: null,
  };
  let decision: AdoptionDecision | undefined = carried?.decision ?? undefined;
  /** retryKeyCreate accepted, and whether an abort was (the key-limit wait reads both). */
  const keySlot = { retry: false, aborted: () => decision?.kind === 'abort' };
  setHandler(adoptionStatusQuery, () => status);
  const open = () => status.keys.filter((k) => k.state === 'waiting' || k.state === 'held');
  const id = `the adoption of ${externalRef} slot ${slot}`;
  const applicable = installDecisions<AdoptionStage, 'revokeAnyway' | 'abortRotation' | 'retryKeyCreate'>({
    table: { revokeAnyway: GATE, abortRotation: ['key_limit', ...GATE], retryKeyCreate: ['key_limit'] },
    updates: {
      revokeAnyway: revokeAnywayUpdate,
      abortRotation: abortRotationUpdate,
      retryKeyCreate: retryKeyCreateUpdate,
    },
    stage: () => status.stage,
    settled: (name) =>
      name !== 'retryKeyCreate' && decision ? `${id} already has a decision: ${decision.kind}` : null,
    notAt: (name) =>
      name === 'retryKeyCreate'
        ? `${id} is ${status.stage}: retryKeyCreate applies at key_limit`
        : `${id} is ${status.stage}: ${name} applies while it waits for quiet or is held` +
          (name === 'abortRotation' ? ', or at key_limit' : ''),
    also: (name) =>
      name === 'retryKeyCreate' && keySlot.retry
        ? `${id} is ${status.stage}: retryKeyCreate applies at key_limit`
        : null,
    take: (name, by) => {
      if (name === 'retryKeyCreate') {
        keySlot.retry = true;
        return 'the key create is tried again now';
      }
      if (name === 'abortRotation') {
        decision ??= { kind: 'abort', by };
        return 'the unmanaged keys still open are kept (unmanaged); the managed key stays';
      }
      decision ??= { kind: 'revoke', by };
      return `the unmanaged keys still open are revoked now: ${open()
        .map((k) => k.keyId)
        .join(', ')}`;
    },
  });
  const waits = new Waits(
    { tenantStatus: (stage) => `rotation_${stage}`, details: () => adoptionDetails(status) },
    carried?.wait ?? null,
  );
  /** A stage the run is not waiting in. */
  const show = (stage: AdoptionStage) => {
    status.stage = stage;
    status.waitingFor = null;
    waits.leave(stage);
  };
  /** A wait: what it waits for, the decisions that apply, and when the run looks again by itself (ms). */
  const waitAt = (stage: AdoptionStage, waitingFor: string, nextCheckInMs: number | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    waits.enter(stage, waitingFor, applicable(), nextCheckInMs);
  };
  if (!carried) upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);

  let begun: BeginAdoptionResult | undefined = carried?.begun;
  let deployed = carried?.deployed ?? false;
  let issuedHere = carried?.issuedHere ?? false;
  // The quiet gate's memory per unmanaged key, and when its previous look began.
  let memories: Map<string, GateMemory> | null = carried?.memories ? new Map(carried.memories) : null;
  let lookedAtMs: number | null = carried?.lookedAtMs ?? null;
  const revoked: string[] = carried?.revoked ?? [];
  let backoff = new Backoff(
    msOf(t.keyLimitRetryInterval),
    pollCeilingMs,
    carried?.phase === 'key_limit' ? carried.polls : 0,
  );
  /** Continues as new in `phase`, carrying what the next run needs to answer and decide the same. */
  async function continueRun(phase: Carried['phase']): Promise<never> {
    await handlersFinished();
    const next: Carried = {
      phase,
      begun: begun!,
      status,
      wait: waits.current,
      polls: backoff.polls,
      memories: memories ? [...memories] : null,
      lookedAtMs,
      decision: decision ?? null,
      revoked,
      deployed,
      issuedHere,
    };
    return continueAsNew<typeof adoptTenantKeys>({
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

  try {
    if (!begun) {
      begun = await db.beginAdoption({
        externalRef,
        slot,
        deployer: input.deployer,
        workflowId: workflowInfo().workflowId,
        runId: workflowInfo().runId,
        reason: input.reason ?? null,
      });
      status.rotationId = begun.rotationId;
      status.keys = begun.unmanaged.map((k): AdoptedKeyView => ({
        ...k,
        state: 'waiting',
        heldReason: null,
        quietCheck: null,
      }));
    }
    const b = begun;

    // A continued run resumes in its phase: past the key-limit wait, the key is issued, deployed and verified.
    if (!carried && b.issue) show('creating_key');
    if (b.issue && (!carried || carried.phase === 'key_limit')) {
      // A function, not a narrowed read: a decision lands while the run awaits.
      const abortedBy = () => (decision?.kind === 'abort' ? decision.by : null);
      const issued = await waitForKeySlot({
        waits,
        backoff,
        decisions: keySlot,
        applicable,
        create: () =>
          platform.issueTenantKey({ externalRef, subaccountId: b.subaccountId, slot, generation: b.toGeneration }),
        atLimit: async (limit, waitMs) => {
          await record({ state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: limit.activeKeys } });
          status.stage = 'key_limit';
          return (status.waitingFor =
            `the tenant is at its active-key limit (${limit.activeKeys.length} active: ` +
            `${limit.activeKeys.map((k) => k.name ?? k.id).join(', ')}): revoke a key nobody uses, then ` +
            `\`tenantctl rotation retry-key-create ${externalRef} --slot ${slot} --reason "..."\` (update ` +
            `retryKeyCreate), or abort (update abortRotation); the create is tried again by itself in ${waitMs} ms`);
        },
        afterWait: () => record({ state: 'running', stage: 'creating_key' }),
        full: () => historyFull(bound),
        continueAsNew: () => continueRun('key_limit'),
      });
      if (issued !== 'aborted') {
        issuedHere = true;
        status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint };
      }
      const by = abortedBy();
      if (by) {
        await record({ state: 'aborted', stage: 'aborted' }, 'rotation.aborted', by.operator);
        show('aborted');
        throw ApplicationFailure.create({
          type: FailureCode.ROTATION_ABORTED,
          message: `aborted at the key limit by ${by.operator}: nothing was issued or revoked`,
          nonRetryable: true,
        });
      }
      waitAt('deploying', `the managed key's deploy through ${b.deployer.kind} (retried until it succeeds)`);
      const deploy = b.deployer.kind === 'notify' ? notify : projectEnv;
      await deploy.deployKeyGeneration({
        rotationId: b.rotationId,
        externalRef,
        subaccountId: b.subaccountId,
        slot,
        generation: b.toGeneration,
        otherGeneration: b.fromGeneration,
        event: 'keyRotated',
        deployer: b.deployer,
        emergency: false,
      });
      deployed = true;
      await record({ stage: 'verifying', deployed: true });
      show('verifying');
      await platform.verifyTenantKey({ externalRef, slot, generation: b.toGeneration });
    } else if (!carried) {
      status.newKey = { ...b.managedKey! };
      status.notes.push('the slot already has its managed key (an earlier adoption): not issued again');
    }

    const gateMemories = (memories ??= new Map<string, GateMemory>(
      status.keys.map((k) => [
        k.keyId,
        { deployedAtMs: Date.now(), deployedAtPlatform: null, lastSeen: null, polls: 0 },
      ]),
    ));
    const revoke = async (key: AdoptedKeyView, why: string, expect: LastUseExpectation | null, operator?: string) => {
      try {
        await platform.revokeUnmanagedKey({
          rotationId: b.rotationId,
          externalRef,
          subaccountId: b.subaccountId,
          keyId: key.keyId,
          why,
          ...(operator ? { operator } : {}),
          ...(expect ? { expect } : {}),
        });
      } catch (error) {
        if (expect && isKeyInUseRefusal(error)) {
          status.notes.push(`revoke of ${key.keyId} refused: used after its gate passed; back to the quiet gate`);
          return;
        }
        throw error;
      }
      key.state = 'revoked';
      revoked.push(key.keyId);
    };

    const resumedAt = carried?.phase === 'gate' || carried?.phase === 'held' ? carried.phase : null;
    if (resumedAt === 'gate') backoff = new Backoff(timings.pollIntervalMs, pollCeilingMs, carried!.polls);
    else if (!resumedAt) {
      backoff = new Backoff(timings.pollIntervalMs, pollCeilingMs);
      await record({ state: 'running', stage: 'waiting_for_quiet' });
    }
    while (resumedAt !== 'held' && !decision && status.keys.some((k) => k.state === 'waiting')) {
      if (historyFull(bound)) await continueRun('gate');
      const waiting = status.keys.filter((k) => k.state === 'waiting');
      const lookingAtMs = Date.now();
      const usage = await platform.observeKeyUsage({
        subaccountId: b.subaccountId,
        keyIds: [...waiting.map((k) => k.keyId), status.newKey.keyId!],
      });
      const nowMs = Date.now();
      for (const key of waiting) {
        const memory = gateMemories.get(key.keyId)!;
        const gate = evaluateGate(
          memory,
          usage[key.keyId] ?? null,
          // The managed key's first use is deploy time on the platform's clock only when this run deployed it;
          // an earlier adoption's key was used long ago, so this run measures from its own start instead.
          b.issue ? (usage[status.newKey.keyId!] ?? null) : null,
          nowMs,
          // A late use is judged by the interval actually waited since the previous look (polls back off).
          { ...timings, pollIntervalMs: nowMs - (lookedAtMs ?? memory.deployedAtMs) },
        );
        key.quietCheck = gate.view;
        if (gate.kind === 'quiet') await revoke(key, 'quiet', expectationOf(gate.observed));
        else if (gate.kind === 'gone') await revoke(key, 'gone on the platform', null);
        else if (gate.kind === 'held') {
          key.state = 'held';
          key.heldReason = gate.reason;
        }
      }
      lookedAtMs = lookingAtMs;
      if (!status.keys.some((k) => k.state === 'waiting')) break;
      const waitMs = backoff.next();
      waitAt(
        'waiting_for_quiet',
        `quiet gate of ${status.keys.filter((k) => k.state === 'waiting').length} ` +
          `unmanaged key(s); next look in ${waitMs} ms`,
        waitMs,
      );
      await condition(() => decision !== undefined, waitMs);
    }

    const held = open();
    if (held.length && !decision && resumedAt !== 'held') {
      await record(
        {
          state: 'held',
          stage: 'held',
          outcome: { held: held.map((k) => ({ keyId: k.keyId, reason: k.heldReason })) },
        },
        'rotation.held',
      );
      waitAt(
        'held',
        `unmanaged key(s) still in use: ${held.map((k) => `${k.keyId} (${k.heldReason})`).join(', ')}. ` +
          (`\`tenantctl rotation revoke-anyway ${externalRef} --slot ${slot} --operator ` +
            `<you> --reason "..."\` revokes them; \`tenantctl rotation abort ...\` keeps them ` +
            `unmanaged`),
      );
      const parent = workflowInfo().parent;
      if (parent)
        await getExternalWorkflowHandle(parent.workflowId)
          .signal(rotationSettledSignal, { workflowId: workflowInfo().workflowId, outcome: 'held' })
          .catch(() => undefined);
    }
    if (held.length && !decision) {
      // Held polls nothing (no timer, no events): only a decision ends it. It re-checks its history only
      // (signals and updates add events), continuing as new past the bound.
      await condition(() => decision !== undefined || historyFull(bound));
      if (!decision) await continueRun('held');
    }
    if (decision?.kind === 'revoke')
      for (const key of open())
        await revoke(
          key,
          `revoked anyway by ${decision.by.operator}: ${decision.by.reason}`,
          null,
          decision.by.operator,
        );
    const kept = open().map((k) => k.keyId);
    for (const key of open()) key.state = 'kept';
    const outcome = kept.length ? 'aborted' : 'completed';
    await record(
      { state: outcome, stage: outcome, outcome: { revoked, kept, notes: status.notes } },
      `rotation.${outcome}`,
      decision?.by.operator,
    );
    show(outcome);
    return {
      externalRef,
      slot,
      outcome,
      keyId: status.newKey.keyId!,
      fingerprint: status.newKey.fingerprint ?? '',
      revoked,
      kept,
    };
  } catch (error) {
    // Continuing as new is not a failure: the next run carries on with this one's state.
    if (error instanceof ContinueAsNew) throw error;
    const cancelled = isCancellation(error);
    await CancellationScope.nonCancellable(async () => {
      if (!begun || status.stage === 'aborted') return;
      // A managed key that never went out is taken back; once deployed, consumers may hold it: it stays.
      if (issuedHere && !deployed)
        await platform.revokeKeyGeneration({
          rotationId: begun.rotationId,
          externalRef,
          subaccountId: begun.subaccountId,
          slot,
          generation: begun.toGeneration,
          why: cancelled ? 'adoption cancelled before deploy' : 'adoption failed before deploy',
        });
      const state = cancelled ? 'cancelled' : 'failed';
      await record(
        { state, stage: state, outcome: { revoked, why: error instanceof Error ? error.message : String(error) } },
        `rotation.${state}`,
      );
      show(state);
    });
    throw error;
  }
}

const GATE = ['waiting_for_quiet', 'held'] as const;

type AdoptionDecision = { kind: 'revoke' | 'abort'; by: DecisionBy };

/** What a run continued as new hands to the next (never a secret: ids, stages, times, decisions). */
interface Carried {
  /** Where the next run resumes: the key-limit wait, the quiet gate's polls, or held for a decision. */
  phase: 'key_limit' | 'gate' | 'held';
  begun: BeginAdoptionResult;
  status: AdoptionStatus;
  wait: WaitView | null;
  /** The current poll's backoff count. */
  polls: number;
  /** The quiet gate's memory per unmanaged key (null before the gate). */
  memories: Array<[string, GateMemory]> | null;
  /** When the gate's previous look began. */
  lookedAtMs: number | null;
  /** A decision that landed and was not yet acted on. */
  decision: AdoptionDecision | null;
  /** The unmanaged keys revoked so far, in order. */
  revoked: string[];
  deployed: boolean;
  issuedHere: boolean;
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
