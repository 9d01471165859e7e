/**
 * rotateParentKey — why: the parent's platform key (svpk_) is the most powerful credential we hold; it must change
 * like every other, without a restart and without a call answered 401. Every worker and gateway reads the current
 * key from our records and reports the one it uses (process_credentials), so the old key is revoked only once no
 * process uses it and the platform shows it quiet. One run at a time (id `rotate-parent-key`).
 *
 *   create new key ─► seal ─► verify (read) ─► make current ─► wait: every live process reports the new key
 *     (key_limit: wait for an operator)                            (a process that stops reporting is not waited for;
 *                                                                   past the deadline: held)
 *   ─► verify (read) ─► quiet gate on the old key (last use, else overlap window; emergency: none) ─► revoke old
 *
 * Operator decisions are Updates with validators (same names as tenant rotation): retryKeyCreate, abortRotation,
 * revokeAnyway, escalateToEmergency. Abort or failure before the old key is revoked rolls back: the old key is
 * current again and the new one is revoked.
 */
import {
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { ParentKeyRef } from '../activities/parent-key.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID, platformTaskQueue } from '../src/domain/ids.js';
import type { RotateParentKeyInput } from '../src/domain/key-slot-input.js';
import { checkDecisionBy, type DecisionAnswer, type DecisionBy } from '../src/domain/operator-decisions.js';
import { databaseStep, platformCall } from './activity-policies.js';
import { accepted, refuseUnlessApplicable } from './decisions.js';
import {
  parentKeyRotationStatusQuery,
  type ParentKeyRotationStage,
  type ParentKeyRotationStatus,
} from './rotate-parent-key-messages.js';
import { evaluateGate, type GateMemory } from './rotate-tenant-key-gate.js';
import {
  abortRotationUpdate,
  escalateToEmergencyUpdate,
  retryKeyCreateUpdate,
  revokeAnywayUpdate,
} from './rotate-tenant-key-messages.js';
import { msOf, validateWorkflowInput } from './validate-input.js';

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

export async function rotateParentKey(rawInput: RotateParentKeyInput): Promise<RotateParentKeyResult> {
  const input = await validateWorkflowInput('rotateParentKey', rawInput, () => PARENT_KEY_ROTATION_WORKFLOW_ID);
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
  const status: ParentKeyRotationStatus = {
    stage: 'creating_key',
    emergency: input.emergency,
    oldKey: null,
    newKey: null,
    processes: { live: 0, stragglers: [] },
    activeKeys: [],
    quietCheck: null,
    notes: input.reason ? [`started: ${input.reason}`] : [],
  };
  setHandler(parentKeyRotationStatusQuery, () => status);
  let retryCreate = false;
  let abortBy: DecisionBy | null = null;
  let revokeBy: DecisionBy | null = null;
  const answer = (effect: string): DecisionAnswer => ({ stage: status.stage, effect });
  const at = (name: string, stages: ParentKeyRotationStage[]) => () =>
    stages.includes(status.stage) ? null : `${name} applies at ${stages.join(', ')} (the run is at ${status.stage})`;
  const decisions = [
    [
      retryKeyCreateUpdate,
      at('retryKeyCreate', ['key_limit']),
      () => ((retryCreate = true), 'the create is tried again now'),
    ],
    [
      abortRotationUpdate,
      at('abortRotation', ['key_limit', 'waiting_for_switch', 'waiting_for_quiet', 'held']),
      (by: DecisionBy) => ((abortBy = by), 'rolling back: the old key is current again, the new one is revoked'),
    ],
    [
      revokeAnywayUpdate,
      at('revokeAnyway', ['waiting_for_switch', 'waiting_for_quiet', 'held']),
      (by: DecisionBy) => ((revokeBy = by), 'the old key is revoked now'),
    ],
    [
      escalateToEmergencyUpdate,
      () =>
        status.emergency
          ? 'already an emergency rotation'
          : at('escalateToEmergency', [
              'creating_key',
              'key_limit',
              'verifying',
              'waiting_for_switch',
              'waiting_for_quiet',
              'held',
            ])(),
      (by: DecisionBy) => {
        status.emergency = true;
        status.notes.push(`escalated to emergency by ${by.operator}: ${by.reason}`);
        return 'no quiet gate: the old key is revoked as soon as every live process uses the new one';
      },
    ],
  ] as const;
  for (const [update, applicable, effect] of decisions) {
    setHandler(update, (raw: DecisionBy) => answer(effect(accepted(checkDecisionBy(raw)))), {
      validator: (raw: DecisionBy) => {
        accepted(checkDecisionBy(raw));
        refuseUnlessApplicable(applicable());
      },
    });
  }

  const begun = await db.beginParentKeyRotation({ runKey: workflowInfo().firstExecutionRunId.slice(0, 12) });
  status.oldKey = begun.old;
  let oldRevoked = false;
  const rollBack = async (why: string, by: DecisionBy | null) => {
    await CancellationScope.nonCancellable(() =>
      platform.rollBackParentKeyRotation({
        oldRowId: begun.old.rowId,
        newRowId: begun.newRowId,
        keyName: begun.keyName,
        operator: by?.operator ?? null,
        why,
      }),
    );
    status.stage = 'aborted';
  };
  const aborted = () => abortBy !== null;

  try {
    for (;;) {
      status.stage = 'creating_key';
      const created = await platform.createParentKeyOnPlatform({ rowId: begun.newRowId, keyName: begun.keyName });
      if (created.state === 'created') {
        status.newKey = created.key;
        break;
      }
      status.stage = 'key_limit';
      status.activeKeys = created.activeKeys;
      retryCreate = false;
      await condition(() => retryCreate || aborted(), t.switchDeadlineMs);
      if (aborted()) throw abortFailure(abortBy);
    }
    status.stage = 'verifying';
    await platform.verifyParentKey({ rowId: begun.newRowId });
    await db.makeParentKeyCurrent({ rowId: begun.newRowId });

    // Every live process reports the new key (or stops reporting, or an operator decides).
    status.stage = 'waiting_for_switch';
    const switchStarted = Date.now();
    for (;;) {
      status.processes = await db.observeParentKeySwitch({ rowId: begun.newRowId, staleAfterMs: t.staleMs });
      if (status.processes.stragglers.length === 0 || revokeBy) break;
      if (Date.now() - switchStarted >= t.switchDeadlineMs) status.stage = 'held';
      await condition(() => aborted() || revokeBy !== null, t.pollMs);
      if (aborted()) throw abortFailure(abortBy);
    }
    status.stage = 'verifying';
    await platform.verifyParentKey({ rowId: begun.newRowId });

    // The quiet gate on the old key, unless an emergency or an operator says revoke now.
    let observed: Awaited<ReturnType<Activities['observeOldParentKey']>>['usage'] = null;
    let oldPlatformId = begun.old.platformKeyId;
    status.stage = 'waiting_for_quiet';
    const memory: GateMemory = { deployedAtMs: 0, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    while (!status.emergency && !revokeBy) {
      const seen = await platform.observeOldParentKey({
        old: { ...begun.old, platformKeyId: oldPlatformId },
        newPlatformKeyId: status.newKey.platformKeyId ?? '',
      });
      oldPlatformId = seen.platformKeyId;
      if (memory.polls === 0) memory.deployedAtMs = Date.now();
      if (seen.ambiguous.length > 0) {
        status.stage = 'held';
        status.quietCheck =
          `the old key's platform id is unknown (imported) and ${seen.ambiguous.length} ` +
          `active keys could be it: name it by revoking the others, or decide (revokeAnyway ` +
          `is refused without an id)`;
      } else {
        const decision = evaluateGate(memory, seen.usage, null, Date.now(), {
          quietPeriodMs: t.quietPeriodMs,
          propagationAllowanceMs: t.pollMs * 2,
          pollIntervalMs: t.pollMs,
          quietDeadlineMs: t.quietDeadlineMs,
          overlapWindowMs: t.overlapWindowMs,
        });
        status.quietCheck = decision.view.verdict;
        if (decision.kind === 'gone') break;
        if (decision.kind === 'quiet') {
          observed = decision.observed;
          break;
        }
        if (decision.kind === 'held') status.stage = 'held';
      }
      await condition(() => aborted() || revokeBy !== null || status.emergency, t.pollMs);
      if (aborted()) throw abortFailure(abortBy);
    }

    status.stage = 'revoking';
    if (!oldPlatformId) {
      const seen = await platform.observeOldParentKey({
        old: begun.old,
        newPlatformKeyId: status.newKey.platformKeyId ?? '',
      });
      oldPlatformId = seen.platformKeyId;
    }
    if (!oldPlatformId)
      throw codedFailure(FailureCode.NO_ACTIVE_KEY, "the old key's platform id is unknown: it was not revoked");
    const by = revokeBy as DecisionBy | null;
    await platform.revokeOldParentKey({
      rowId: begun.old.rowId,
      platformKeyId: oldPlatformId,
      expect: observed?.lastUse ? { lastUse: observed.lastUse, useCount: observed.useCount ?? null } : null,
      operator: by?.operator ?? null,
      why: by
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
      newKey: status.newKey,
      emergency: status.emergency,
      quietCheck: status.quietCheck ?? (status.emergency ? 'emergency: no quiet gate' : 'operator decision'),
    };
  } catch (error) {
    if (!oldRevoked) {
      const by = abortBy as DecisionBy | null;
      await rollBack(
        by ? `aborted by ${by.operator}: ${by.reason}` : isCancellation(error) ? 'cancelled' : 'failed',
        by,
      );
    }
    throw error;
  }
}

function abortFailure(by: DecisionBy | null) {
  return codedFailure(
    FailureCode.ROTATION_ABORTED,
    `parent key rotation aborted${by ? ` by ${by.operator}: ${by.reason}` : ''}`,
  );
}
