/**
 * revokeTenantKeySlot — why: a slot's key is revoked only when nothing uses it (no key revoked while in use). The
 * platform's key record is read through the same quiet gate as rotation (evaluateGate): revoked once it shows no
 * new use for the quiet period (or, where the platform shows no last use, after the overlap window). A use seen
 * while waiting, an unreadable last use, or no quiet before the deadline refuses the revoke: the key stays active
 * and the run says why. `force` (operator and reason required, audited) skips the gate.
 *
 *   validate ─► slot's active key ─► force? ─no─► gate (poll) ─► quiet ─► revoke (records + audit)
 *                                          │                 └─► in use / unknown / deadline ─► refused
 *                                          └yes──────────────────────► revoke (forced, audited)
 */
import {
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { keyRevokeWorkflowId, platformTaskQueue } from '../src/domain/ids.js';
import type { RevokeTenantKeyInput } from '../src/domain/key-slot-input.js';
import { tenantExternalRefKey } from '../src/domain/search-attributes.js';
import { databaseStep, platformCall } from './activity-policies.js';
import { keyRevokeStatusQuery, type KeyRevokeStatus } from './key-slot-messages.js';
import { evaluateGate, type GateMemory } from './rotate-tenant-key-gate.js';
import { msOf, validateWorkflowInput } from './validate-input.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export interface RevokeTenantKeySlotResult {
  externalRef: string;
  slot: string;
  outcome: 'revoked' | 'refused';
  keyId: string;
  forced: boolean;
  /** Why (the gate's last verdict, or the operator's reason). */
  verdict: string;
}

const DEFAULTS = { quietPeriod: '2m', pollInterval: '10s', quietDeadline: '15m', overlapWindow: '10m' } as const;

export async function revokeTenantKeySlot(rawInput: RevokeTenantKeyInput): Promise<RevokeTenantKeySlotResult> {
  const input = await validateWorkflowInput('revokeTenantKey', rawInput, (i) =>
    keyRevokeWorkflowId(i.externalRef, i.slot),
  );
  upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
  const platform = proxyActivities<Activities>(platformCall(platformTaskQueue(workflowInfo().taskQueue)));
  const status: KeyRevokeStatus = {
    externalRef: input.externalRef,
    slot: input.slot,
    stage: 'starting',
    keyId: null,
    forced: input.force,
    verdict: null,
    polls: 0,
  };
  setHandler(keyRevokeStatusQuery, () => status);
  const target = await steps.findSlotKeyToRevoke({ externalRef: input.externalRef, slot: input.slot });
  status.keyId = target.keyId;
  const result = (outcome: 'revoked' | 'refused', verdict: string): RevokeTenantKeySlotResult => ({
    externalRef: input.externalRef,
    slot: input.slot,
    outcome,
    keyId: target.keyId,
    forced: input.force,
    verdict,
  });

  if (!input.force) {
    const o = input.options ?? {};
    const t = {
      quietPeriodMs: msOf(o.quietPeriod ?? DEFAULTS.quietPeriod),
      // No propagation allowance: nothing was deployed; any use seen while waiting means the key is in use.
      propagationAllowanceMs: 0,
      pollIntervalMs: msOf(o.pollInterval ?? DEFAULTS.pollInterval),
      quietDeadlineMs: msOf(o.quietDeadline ?? DEFAULTS.quietDeadline),
      overlapWindowMs: msOf(o.overlapWindow ?? DEFAULTS.overlapWindow),
    };
    const memory: GateMemory = { deployedAtMs: 0, deployedAtPlatform: null, lastSeen: null, polls: 0 };
    status.stage = 'waiting_for_quiet';
    for (;;) {
      const usage = await platform.observeKeyUsage({ subaccountId: target.subaccountId, keyIds: [target.keyId] });
      // The gate's clock starts at the first reading: a use seen after it means the key is in use.
      if (memory.polls === 0) memory.deployedAtMs = Date.now();
      const decision = evaluateGate(memory, usage[target.keyId] ?? null, null, Date.now(), t);
      status.polls = memory.polls;
      status.verdict = decision.view.verdict;
      if (decision.kind === 'quiet' || decision.kind === 'gone') break;
      if (decision.kind === 'held') {
        status.stage = 'refused';
        return result(
          'refused',
          `${decision.reason === 'used_after_allowance' ? 'the key is in use' : decision.view.verdict}: ` +
            `not revoked (revoke with force, operator and reason, to revoke it anyway)`,
        );
      }
      await sleep(t.pollIntervalMs);
    }
  }
  status.stage = 'revoking';
  await platform.revokeSlotKey({
    externalRef: input.externalRef,
    slot: input.slot,
    generation: target.generation,
    subaccountId: target.subaccountId,
    actor: input.operator ? `operator:${input.operator}` : 'worker',
    why: input.force ? (input.reason ?? 'forced') : (status.verdict ?? 'quiet'),
    forced: input.force,
  });
  status.stage = 'revoked';
  return result('revoked', input.force ? `forced by ${input.operator}: ${input.reason}` : (status.verdict ?? 'quiet'));
}
