/**
 * revokeTenantKeySlot — why: a slot's key is revoked only when nothing uses it (no key revoked while in use). The
 * platform's key record is read through the same quiet gate as rotation (evaluateGate): revoked once it shows no
 * new use for the quiet period (or, where the platform shows no last use, after the overlap window). A use seen
 * while waiting, an unreadable last use, or no quiet before the deadline refuses the revoke: the key stays active
 * and the run says why. `force` (operator and reason required, audited) skips the gate.
 *
 * The wait for quiet follows the one rule for waits (workflows/waits.ts): the run answers `currentWait` (stage
 * `waiting_for_quiet`, what ends it, no decisions), sets TenantStatus `key_revoke:<stage>` when it starts and ends,
 * backs its poll off to a ceiling, and continues as new past its history bound carrying the gate's memory.
 *
 *   validate ─► slot's active key ─► force? ─no─► gate (poll) ─► quiet ─► revoke (records + audit)
 *                                          │                 └─► in use / unknown / deadline ─► refused
 *                                          └yes──────────────────────► revoke (forced, audited)
 *
 * The run's state is one `KeyRevoke` object (as closeTenant's `Close`): its query handler calls into it; the
 * gate's polls and the revoke are methods, the flow `run()`.
 */
import {
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { SlotKeyTarget } from '../../activities/keys/slots.js';
import { keyRevokeWorkflowId, platformTaskQueue } from '../../src/domain/ids.js';
import type { RevokeTenantKeyInput } from '../../src/domain/key-slot-input.js';
import { tenantExternalRefKey } from '../../src/domain/search-attributes.js';
import { databaseStep, platformCall } from '../activity-policies.js';
import { keyRevokeStatusQuery, type KeyRevokeStatus } from './key-slot-messages.js';
import type { WatchKeyUsageResult } from '../../activities/keys/watch-key-usage.js';
import { evaluateGate, type GateMemory } from './quiet-gate.js';
import { QUIET_GATE_WATCH_PATCH, watchKeys, watchTimes } from './quiet-watch.js';
import { msOf, validateWorkflowInput } from '../validate-input.js';
import { Backoff, handlersFinished, historyFull, Waits, type WaitView } from '../waits.js';

const steps = proxyLocalActivities<Activities>(databaseStep);

export interface RevokeTenantKeySlotResult {
  externalRef: string;
  slot: string;
  outcome: 'revoked' | 'refused';
  keyId: string;
  forced: boolean;
  /** Why (the gate's last verdict, or the operator's reason). */
  verdict: string;
  /**
   * The key's last use as the quiet gate last saw it (null: none seen, or not known; absent in runs from before
   * issue 47): what the tenant view shows of a key that holds a plan version.
   */
  lastUsedAt?: string | null;
}

const DEFAULTS = { quietPeriod: '2m', pollInterval: '10s', quietDeadline: '15m', overlapWindow: '10m' } as const;

export async function revokeTenantKeySlot(rawInput: RevokeTenantKeyInput): Promise<RevokeTenantKeySlotResult> {
  const input = await validateWorkflowInput('revokeTenantKey', rawInput, (i) =>
    keyRevokeWorkflowId(i.externalRef, i.slot),
  );
  return new KeyRevoke(rawInput, input).run();
}

type RevokeTenantKeyRequest = Awaited<ReturnType<typeof validateWorkflowInput<'revokeTenantKey'>>>;

/** One revoke run: its status (one-line query handler), the quiet gate's polls and the revoke as methods. */
class KeyRevoke {
  private readonly carried: Carried | undefined;
  private readonly platform: ReturnType<typeof proxyActivities<Activities>>;
  private readonly status: KeyRevokeStatus;
  private readonly waits: Waits;
  private target!: SlotKeyTarget;
  // The last use the gate saw (a result field only: no command, so recorded histories replay as before).
  private lastUsedAt: string | null = null;
  /** QUIET_GATE_WATCH_PATCH's answer, once asked. */
  private watches: boolean | undefined;

  constructor(
    private readonly rawInput: RevokeTenantKeyInput,
    private readonly input: RevokeTenantKeyRequest,
  ) {
    const carried = (this.carried = input.continued as Carried | undefined);
    if (!carried) upsertSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]);
    this.platform = proxyActivities<Activities>(platformCall(platformTaskQueue(workflowInfo().taskQueue)));
    this.status = carried?.status ?? {
      externalRef: input.externalRef,
      slot: input.slot,
      stage: 'starting',
      keyId: null,
      forced: input.force,
      verdict: null,
      polls: 0,
    };
    setHandler(keyRevokeStatusQuery, () => this.status);
    this.waits = new Waits({ tenantStatus: (stage) => `key_revoke:${stage}` }, carried?.wait ?? null);
  }

  async run(): Promise<RevokeTenantKeySlotResult> {
    const { input, status } = this;
    this.target =
      this.carried?.target ?? (await steps.findSlotKeyToRevoke({ externalRef: input.externalRef, slot: input.slot }));
    status.keyId = this.target.keyId;
    if (!input.force) {
      const refused = await this.waitForQuiet();
      if (refused) return refused;
    }
    return this.revoke();
  }

  /** The quiet gate's polls until the key is quiet (null) or the revoke is refused (the result). */
  private async waitForQuiet(): Promise<RevokeTenantKeySlotResult | null> {
    const { input, status, waits, target, carried } = this;
    const o = input.options ?? {};
    const t = {
      quietPeriodMs: msOf(o.quietPeriod ?? DEFAULTS.quietPeriod),
      // No propagation allowance: nothing was deployed; any use seen while waiting means the key is in use.
      propagationAllowanceMs: 0,
      pollIntervalMs: msOf(o.pollInterval ?? DEFAULTS.pollInterval),
      quietDeadlineMs: msOf(o.quietDeadline ?? DEFAULTS.quietDeadline),
      overlapWindowMs: msOf(o.overlapWindow ?? DEFAULTS.overlapWindow),
    };
    // The gate's memory (when its clock started, the last use seen and since when) is carried across
    // continue-as-new: a use seen after a continuation is still a use after the gate began.
    const memory: GateMemory = carried?.memory ?? {
      deployedAtMs: 0,
      deployedAtPlatform: null,
      lastSeen: null,
      polls: 0,
    };
    const backoff = new Backoff(
      t.pollIntervalMs,
      o.pollCeiling === undefined ? undefined : msOf(o.pollCeiling),
      carried?.polls ?? 0,
    );
    // When the key was last read: the gate judges a use first seen now by the time since that look.
    let lastLookMs = carried?.lastLookMs ?? null;
    // What the watch since the previous look answered (QUIET_GATE_WATCH_PATCH): judged as that look.
    let watched: WatchKeyUsageResult | null = null;
    status.stage = 'waiting_for_quiet';
    for (;;) {
      if (historyFull(o.historyEventBound)) {
        await this.continueRun({ target, memory, status, wait: waits.current, polls: backoff.polls, lastLookMs });
      }
      const usage =
        watched?.usage ??
        (await this.platform.observeKeyUsage({
          subaccountId: target.subaccountId,
          keyIds: [target.keyId],
        }));
      // The gate's clock starts at the first reading: a use seen after it means the key is in use.
      const now = Date.now();
      if (memory.polls === 0) memory.deployedAtMs = now;
      // The watch's looks that saw nothing new count as polls.
      memory.polls += (watched?.looks ?? 1) - 1;
      backoff.polls += (watched?.looks ?? 1) - 1;
      // The interval actually waited since the previous look (the poll backs off), not the configured one.
      const sinceLook = lastLookMs === null ? t.pollIntervalMs : now - lastLookMs;
      lastLookMs = watched ? watched.lookedAtMs : now;
      watched = null;
      const decision = evaluateGate(memory, usage[target.keyId] ?? null, null, now, {
        ...t,
        pollIntervalMs: sinceLook,
      });
      status.polls = memory.polls;
      status.verdict = decision.view.verdict;
      this.lastUsedAt = decision.view.oldKeyLastUsedAt;
      if (decision.kind === 'quiet' || decision.kind === 'gone') {
        if (waits.current) waits.leave('revoking');
        return null;
      }
      if (decision.kind === 'held') {
        status.stage = 'refused';
        if (waits.current) waits.leave('refused');
        return this.result(
          'refused',
          `${decision.reason === 'used_after_allowance' ? 'the key is in use' : decision.view.verdict}: ` +
            `not revoked (revoke with force, operator and reason, to revoke it anyway)`,
        );
      }
      const waitMs = backoff.next();
      const ends =
        decision.view.method === 'overlap-window'
          ? `revoked when the overlap window ends (${iso(memory.deployedAtMs + t.overlapWindowMs)})`
          : `revoked once it shows no use for ${t.quietPeriodMs} ms; refused (the key stays active) on a new use ` +
            `or when not quiet by ${iso(memory.deployedAtMs + t.quietDeadlineMs)}`;
      waits.enter(
        'waiting_for_quiet',
        `key ${target.keyId} of slot ${input.slot} to go unused (${decision.view.verdict}): ${ends}`,
        [],
        waitMs,
      );
      // Asked at the first wait, in the activation the look's answer started (quiet-watch.ts says why).
      if (!(this.watches ??= patched(QUIET_GATE_WATCH_PATCH))) {
        await sleep(waitMs);
        continue;
      }
      const { times } = watchTimes([{ memory, method: decision.view.method }], t, lastLookMs, now, waitMs, backoff);
      watched = await watchKeys(platformTaskQueue(workflowInfo().taskQueue), {
        subaccountId: target.subaccountId,
        keyIds: [target.keyId],
        freshNeeded: false,
        seen: { [target.keyId]: usage[target.keyId] ?? null },
        ...times,
      });
    }
  }

  private async continueRun(next: Carried): Promise<never> {
    await handlersFinished();
    return continueAsNew<typeof revokeTenantKeySlot>({
      ...this.rawInput,
      continued: next as unknown as Record<string, unknown>,
    });
  }

  /** Quiet, or forced: the key revoked (records and audit). */
  private async revoke(): Promise<RevokeTenantKeySlotResult> {
    const { input, status, target } = this;
    status.stage = 'revoking';
    await this.platform.revokeSlotKey({
      externalRef: input.externalRef,
      slot: input.slot,
      generation: target.generation,
      subaccountId: target.subaccountId,
      actor: input.operator ? `operator:${input.operator}` : 'worker',
      why: input.force ? (input.reason ?? 'forced') : (status.verdict ?? 'quiet'),
      forced: input.force,
    });
    status.stage = 'revoked';
    return this.result(
      'revoked',
      input.force ? `forced by ${input.operator}: ${input.reason}` : (status.verdict ?? 'quiet'),
    );
  }

  private result(outcome: 'revoked' | 'refused', verdict: string): RevokeTenantKeySlotResult {
    return {
      externalRef: this.input.externalRef,
      slot: this.input.slot,
      outcome,
      keyId: this.target.keyId,
      forced: this.input.force,
      verdict,
      lastUsedAt: this.lastUsedAt,
    };
  }
}

/** What a run continued as new hands to the next: the key, the gate's memory, where it stands, the wait. */
interface Carried {
  target: SlotKeyTarget;
  memory: GateMemory;
  status: KeyRevokeStatus;
  wait: WaitView | null;
  polls: number;
  lastLookMs: number | null;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
