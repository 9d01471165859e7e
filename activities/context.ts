import { Context } from '@temporalio/activity';
import type { Logger } from '../src/infra/log.js';
import type { OutboundFetch } from '../src/infra/outbound/fetch.js';
import type { DriftOptions } from './drift/options.js';
import type { Pool } from '../src/db/pool.js';
import type { PlatformClient } from '../src/platform/index.js';
import type { RotationOptions } from './keys/rotation-options.js';
import type { ApprovalAction } from '../src/config/safe-ops.js';
import type { Vault } from '../src/secrets/vault.js';

/** Lifecycle settings; here, not in lifecycle.ts, so that the two do not import each other. */
export interface LifecycleOptions {
  /** resume refuses a tenant whose wallet balance is below this (micro-USD, whole number). */
  resumeBalanceFloorMicroUsd?: string;
  /**
   * CLOSE_DELAY: a close's default delay and its minimum, which every close run holds its start to (absent: `0`);
   * only an admin's close through the gateway, with its sealed grant, is sooner.
   */
  closeDelay?: string;
}

/** Dependencies every activity factory receives; built once per worker process. */
export interface ActivityDeps {
  pool: Pool;
  platform: PlatformClient;
  vault: Vault;
  logger: Logger;
  /** Lifecycle settings (resume review floor); defaults apply when absent. */
  lifecycle?: LifecycleOptions;
  /** Key rotation settings (deployers); defaults apply when absent. */
  rotation?: RotationOptions;
  /** Drift reconciliation settings (policies, timings, Temporal client); report-only defaults when absent. */
  drift?: DriftOptions;
  /** Parent platform key rotation: where to make the new key's verification read (the platform base URL). */
  parentKey?: { baseUrl: string };
  /** Event delivery settings; defaults apply when absent. */
  events?: EventOptions;
  /**
   * The POST of event deliveries and rotation notices (src/infra/outbound/fetch.ts, with the worker's
   * OUTBOUND_ALLOW_HOSTS); absent: the same guard with an empty allow-list (public https hosts only).
   */
  outbound?: OutboundFetch;
  /** TRANSFER_MAX_MICRO_USD: the largest single transfer (absent: src/domain/transfer-limit.ts's default). */
  transfers?: { maxMicroUsd?: string };
  /**
   * The worker's APPROVAL_POLICY: a resolveTransfer it gates must carry an approval, checked by the
   * run (consumeApproval) however the verdict was sent. Absent: nothing gated.
   */
  approvals?: { actions: ReadonlySet<ApprovalAction> };
  /** PLATFORM_RATE_LIMIT_PER_SECOND: the platform's request budget, which a plan rollout paces itself by. */
  platformRequestsPerSecond?: number;
  /** PLATFORM_TENANT_KEY_LIMIT: onboarding by plan refuses a plan whose slots do not fit it (absent: its default). */
  platformTenantKeyLimit?: number;
  /** A new key's first use: the 401 retries and the bound on keys replaced (absent: activities/keys/issue-key.ts). */
  keyProof?: KeyProofOptions;
}

/**
 * A new key's first use: a real platform may take seconds to accept a key it has just made, so a 401 is retried
 * after each of `retryDelaysMs`; still refused, the key is unusable. The onboarding's issue-and-verify then revokes
 * it and lets the next attempt issue another, at most `maxRejectedKeys` times per record, before it fails for an
 * operator (KEY_REJECTED, final). Defaults: activities/keys/issue-key.ts DEFAULT_KEY_PROOF.
 */
export interface KeyProofOptions {
  retryDelaysMs: readonly number[];
  maxRejectedKeys: number;
}

/** Event delivery and alert settings. */
export interface EventOptions {
  /** One delivery request's timeout (default 10 s). */
  requestTimeoutMs?: number;
  /** wallet.low_balance below this many micro-USD when a tenant has no threshold of its own (unset: no default). */
  lowBalanceMicroUsd?: string;
  /**
   * Final events (every delivery delivered or failed) older than this are pruned by an idle dispatcher (default 30).
   */
  retentionDays?: number;
}

/** Who to write into the audit log for the running activity. */
/** This activity attempt's number (1 outside an activity, as when a test calls it directly). */
export function activityAttempt(): number {
  try {
    return Context.current().info.attempt;
  } catch {
    return 1;
  }
}

export function auditOrigin(): { actor: string; workflowId: string | null; runId: string | null } {
  try {
    const execution = Context.current().info.workflowExecution;
    return { actor: 'worker', workflowId: execution?.workflowId ?? null, runId: execution?.runId ?? null };
  } catch {
    return { actor: 'worker', workflowId: null, runId: null };
  }
}
