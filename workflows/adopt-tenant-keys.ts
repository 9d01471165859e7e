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
 * Updates, so `tenantctl rotation revoke-anyway|abort R` answer here too. Tokens never pass through here.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { BeginAdoptionResult } from '../activities/adoption.js';
import type { LastUseExpectation } from '../activities/rotation.js';
import { msOf } from '../src/domain/durations.js';
import { FailureCode } from '../src/domain/failures.js';
import { platformTaskQueue, rotationWorkflowId } from '../src/domain/ids.js';
import type {
  AdoptTenantKeysInput,
  AdoptTenantKeysResult,
  ParsedAdoptTenantKeysInput,
} from '../src/domain/import-input.js';
import { checkDecisionBy, type DecisionBy } from '../src/domain/operator-decisions.js';
import { DEFAULT_TIMINGS } from '../src/domain/rotation-defaults.js';
import { tenantExternalRefKey, tenantStatusKey } from '../src/domain/search-attributes.js';
import {
  databaseStep,
  notifyDeploy as notifyDeployPolicy,
  platformCall,
  projectEnvDeploy,
} from './activity-policies.js';
import {
  adoptionStatusQuery,
  type AdoptedKeyView,
  type AdoptionStage,
  type AdoptionStatus,
} from './adopt-tenant-keys-messages.js';
import { accepted, refuseUnlessApplicable } from './decisions.js';
import {
  evaluateGate,
  expectationOf,
  gateTimingsOf,
  isKeyInUseRefusal,
  type GateMemory,
  type GateTimings,
} from './rotate-tenant-key-gate.js';
import { abortRotationUpdate, revokeAnywayUpdate, rotationSettledSignal } from './rotate-tenant-key-messages.js';
import { validateWorkflowInput } from './validate-input.js';

export * from './adopt-tenant-keys-messages.js';

const db = proxyLocalActivities<Activities>(databaseStep);
const notify = proxyActivities<Activities>(notifyDeployPolicy);

export async function adoptTenantKeys(rawInput: AdoptTenantKeysInput): Promise<AdoptTenantKeysResult> {
  const input: ParsedAdoptTenantKeysInput = await validateWorkflowInput('adoptTenantKeys', rawInput, (i) =>
    rotationWorkflowId(i.externalRef, i.slot),
  );
  const { externalRef, slot } = input;
  const t = { ...DEFAULT_TIMINGS, ...input.options };
  const timings: GateTimings = gateTimingsOf(t);
  const queue = platformTaskQueue(workflowInfo().taskQueue);
  const platform = proxyActivities<Activities>(platformCall(queue));
  const projectEnv = proxyActivities<Activities>(projectEnvDeploy(queue));

  const status: AdoptionStatus = {
    externalRef,
    slot,
    stage: 'starting',
    rotationId: null,
    newKey: { keyId: null, fingerprint: null },
    keys: [],
    notes: [],
    waitingFor: null,
  };
  let decision: { kind: 'revoke' | 'abort'; by: DecisionBy } | undefined;
  setHandler(adoptionStatusQuery, () => status);
  const show = (stage: AdoptionStage, waitingFor: string | null = null) => {
    status.stage = stage;
    status.waitingFor = waitingFor;
    upsertSearchAttributes([{ key: tenantStatusKey, value: `rotation_${stage}` }]);
  };
  const open = () => status.keys.filter((k) => k.state === 'waiting' || k.state === 'held');
  const applies = (what: string) =>
    decision
      ? `the adoption of ${externalRef} slot ${slot} already has a decision: ${decision.kind}`
      : status.stage === 'waiting_for_quiet' ||
          status.stage === 'held' ||
          (what === 'abort' && status.stage === 'key_limit')
        ? null
        : `the adoption of ${externalRef} slot ${slot} is ${status.stage}: ${what} applies ` +
          `while it waits for quiet or is held`;
  setHandler(
    revokeAnywayUpdate,
    (raw) => {
      decision ??= { kind: 'revoke', by: accepted(checkDecisionBy(raw)) };
      return {
        stage: status.stage,
        effect: `the unmanaged keys still open are revoked now: ${open()
          .map((k) => k.keyId)
          .join(', ')}`,
      };
    },
    { validator: (raw) => (accepted(checkDecisionBy(raw)), refuseUnlessApplicable(applies('revokeAnyway'))) },
  );
  setHandler(
    abortRotationUpdate,
    (raw) => {
      decision ??= { kind: 'abort', by: accepted(checkDecisionBy(raw)) };
      return {
        stage: status.stage,
        effect: 'the unmanaged keys still open are kept (unmanaged); the managed key stays',
      };
    },
    { validator: (raw) => (accepted(checkDecisionBy(raw)), refuseUnlessApplicable(applies('abort'))) },
  );
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]);

  let begun: BeginAdoptionResult | undefined;
  let deployed = false;
  let issuedHere = false;
  const record = (change: Parameters<Activities['recordRotation']>[0]['change'], audit?: string, operator?: string) =>
    db.recordRotation({
      rotationId: begun!.rotationId,
      externalRef,
      change,
      ...(audit ? { audit } : {}),
      ...(operator ? { operator } : {}),
    });
  const revoked: string[] = [];

  try {
    begun = await db.beginAdoption({
      externalRef,
      slot,
      deployer: input.deployer,
      workflowId: workflowInfo().workflowId,
      runId: workflowInfo().runId,
      reason: input.reason ?? null,
    });
    const b = begun;
    status.rotationId = b.rotationId;
    status.keys = b.unmanaged.map((k): AdoptedKeyView => ({
      ...k,
      state: 'waiting',
      heldReason: null,
      quietCheck: null,
    }));

    if (b.issue) {
      show('creating_key');
      for (;;) {
        const issued = await platform.issueTenantKey({
          externalRef,
          subaccountId: b.subaccountId,
          slot,
          generation: b.toGeneration,
        });
        if (issued.state === 'issued') {
          issuedHere = true;
          status.newKey = { keyId: issued.keyId, fingerprint: issued.fingerprint };
          break;
        }
        await record({ state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: issued.activeKeys } });
        show(
          'key_limit',
          `the tenant is at its active-key limit: revoke a key nobody uses (or abort); ` +
            `retried every ${t.keyLimitRetryInterval}`,
        );
        await condition(() => decision?.kind === 'abort', msOf(t.keyLimitRetryInterval));
        if (decision?.kind === 'abort') {
          await record({ state: 'aborted', stage: 'aborted' }, 'rotation.aborted', decision.by.operator);
          show('aborted');
          throw ApplicationFailure.create({
            type: FailureCode.ROTATION_ABORTED,
            message: `aborted at the key limit by ${decision.by.operator}: nothing was issued or revoked`,
            nonRetryable: true,
          });
        }
        await record({ state: 'running', stage: 'creating_key' });
      }
      show('deploying');
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
    } else {
      status.newKey = { ...b.managedKey! };
      status.notes.push('the slot already has its managed key (an earlier adoption): not issued again');
    }

    const memories = new Map<string, GateMemory>(
      status.keys.map((k) => [
        k.keyId,
        { deployedAtMs: Date.now(), deployedAtPlatform: null, lastSeen: null, polls: 0 },
      ]),
    );
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

    await record({ state: 'running', stage: 'waiting_for_quiet' });
    while (!decision && status.keys.some((k) => k.state === 'waiting')) {
      const waiting = status.keys.filter((k) => k.state === 'waiting');
      const usage = await platform.observeKeyUsage({
        subaccountId: b.subaccountId,
        keyIds: [...waiting.map((k) => k.keyId), status.newKey.keyId!],
      });
      for (const key of waiting) {
        const gate = evaluateGate(
          memories.get(key.keyId)!,
          usage[key.keyId] ?? null,
          // The managed key's first use is deploy time on the platform's clock only when this run deployed it;
          // an earlier adoption's key was used long ago, so this run measures from its own start instead.
          b.issue ? (usage[status.newKey.keyId!] ?? null) : null,
          Date.now(),
          timings,
        );
        key.quietCheck = gate.view;
        if (gate.kind === 'quiet') await revoke(key, 'quiet', expectationOf(gate.observed));
        else if (gate.kind === 'gone') await revoke(key, 'gone on the platform', null);
        else if (gate.kind === 'held') {
          key.state = 'held';
          key.heldReason = gate.reason;
        }
      }
      if (!status.keys.some((k) => k.state === 'waiting')) break;
      show(
        'waiting_for_quiet',
        `quiet gate of ${status.keys.filter((k) => k.state === 'waiting').length} ` +
          `unmanaged key(s); next look in ${t.pollInterval}`,
      );
      await condition(() => decision !== undefined, timings.pollIntervalMs);
    }

    const held = open();
    if (held.length && !decision) {
      await record(
        {
          state: 'held',
          stage: 'held',
          outcome: { held: held.map((k) => ({ keyId: k.keyId, reason: k.heldReason })) },
        },
        'rotation.held',
      );
      show(
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
      await condition(() => decision !== undefined);
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
