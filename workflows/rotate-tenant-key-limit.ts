import { condition } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { IssueKeyResult } from '../activities/keys.js';
import type { BeginRotationResult } from '../activities/rotation.js';
import type { GateTimings } from './rotate-tenant-key-gate.js';
import type { Decision } from './rotate-tenant-key-decisions.js';
import type { RotationStatus } from './rotate-tenant-key-messages.js';

/**
 * Creates the new generation with onboarding's own activity (same key names, same orphan handling).
 * At the tenant's active-key limit the run waits, listing the active keys and which look unused,
 * until an operator frees a slot (retryKeyCreate), aborts, or the slow retry finds room. It never
 * revokes a key itself to make room: only an operator knows which key nobody needs.
 */
export interface KeyLimitContext {
  begun: BeginRotationResult;
  status: RotationStatus;
  signals: { decision: Decision | undefined; retryCreate: boolean };
  timings: GateTimings;
  keyLimitRetryMs: number;
  platform: Pick<Activities, 'issueTenantKey'>;
  record(change: Parameters<Activities['recordRotation']>[0]['change'], audit?: string): Promise<void>;
  show(stage: RotationStatus['stage'], waitingFor?: string | null): void;
  tellParent(outcome: 'key_limit'): Promise<void>;
}

export async function waitForFreeKeySlot(ctx: KeyLimitContext): Promise<Extract<IssueKeyResult, { state: 'issued' }> | 'aborted'> {
  const { begun, status, signals } = ctx;
  let told = false;
  for (;;) {
    const issued = await ctx.platform.issueTenantKey({ externalRef: status.externalRef, subaccountId: begun.subaccountId, slot: status.slot, generation: begun.toGeneration });
    if (issued.state === 'issued') {
      if (status.activeKeys) {
        status.activeKeys = null;
        await ctx.record({ state: 'running', stage: 'deploying' });
      }
      return issued;
    }
    status.activeKeys = issued.activeKeys.map((k) => ({
      ...k,
      isCurrentKeyOfSlot: k.id === begun.oldKeyId,
      looksUnused: k.id !== begun.oldKeyId && k.lastUseKnown && (k.lastUsedAt === null || Date.now() - Date.parse(k.lastUsedAt) > ctx.timings.quietPeriodMs),
    }));
    const unused = status.activeKeys.filter((k) => k.looksUnused).map((k) => k.id);
    await ctx.record({ state: 'key_limit', stage: 'key_limit', outcome: { activeKeys: status.activeKeys } }, told ? undefined : 'rotation.key_limit');
    ctx.show(
      'key_limit',
      `the tenant is at its active-key limit (${status.activeKeys.length} active). ${unused.length ? `Keys that look unused: ${unused.join(', ')}.` : 'No key looks unused.'} ` +
        `Revoke one that nobody uses, then \`tenantctl rotation retry-key-create ${status.externalRef} --slot ${status.slot} --operator <you> --reason "..."\` (update retryKeyCreate); or \`tenantctl rotation abort ...\` (update abortRotation). The key being rotated is in use and is never revoked to make room`,
    );
    if (!told) await ctx.tellParent('key_limit');
    told = true;
    signals.retryCreate = false;
    await condition(() => signals.retryCreate || signals.decision?.kind === 'abort', ctx.keyLimitRetryMs);
    if (signals.decision?.kind === 'abort') return 'aborted';
  }
}
