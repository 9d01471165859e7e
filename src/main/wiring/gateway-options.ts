import { deployerReadinessOf, type RotationDeployerEnv } from '../../client/keys/deployer-readiness.js';
import type { Config } from '../../config/index.js';
import type { GatewayOptions } from '../../gateway/options.js';
import { safeOpsOf, type SafeOps } from './safe-ops.js';

/** What the gateway's options are made of: every setting it reads, and nothing else. */
type GatewaySettings = Pick<
  Config,
  | 'GATEWAY_API_TOKENS'
  | 'GATEWAY_CODEC_TOKENS'
  | 'GATEWAY_CODEC_CORS_ORIGINS'
  | 'GATEWAY_CODEC_HOSTS'
  | 'GATEWAY_HOST'
  | 'GATEWAY_PUBLIC_URL'
  | 'GATEWAY_WEBHOOK_BODY_LIMIT'
  | 'GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS'
  | 'GATEWAY_WEBHOOK_TOLERANCE_SECONDS'
  | 'GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS'
  | 'OUTBOUND_ALLOW_HOSTS'
  | 'RESUME_BALANCE_FLOOR_MICRO_USD'
  | 'TRANSFER_MAX_MICRO_USD'
  | 'PLATFORM_TENANT_KEY_LIMIT'
  | 'DRIFT_SCHEDULE_EVERY'
  | 'EVENTS_RETRY_FOR'
  | 'EVENTS_SECRET_OVERLAP_SECONDS'
  | 'OPERATORS'
  | 'CLOSE_DELAY'
  | 'APPROVAL_POLICY'
  | 'APPROVAL_TTL'
> &
  RotationDeployerEnv;

/**
 * The app factory's options from the configuration, all of them, once (the platform clients, which need the
 * process's parent key, are added by the entry).
 */
export function gatewayOptionsOf(
  env: GatewaySettings,
  taskQueue: string,
  safeOps: SafeOps = safeOpsOf(env),
): GatewayOptions {
  return {
    operators: safeOps.operators,
    closeDelay: safeOps.closeDelay,
    approvals: { actions: safeOps.approvals, ttlMs: safeOps.approvalTtlMs },
    // A resume below the floor is refused before it starts (the worker checks it again with its own setting).
    resumeBalanceFloorMicroUsd: env.RESUME_BALANCE_FLOOR_MICRO_USD,
    maxTransferMicroUsd: env.TRANSFER_MAX_MICRO_USD,
    tenantKeyLimit: env.PLATFORM_TENANT_KEY_LIMIT,
    driftScheduleEvery: env.DRIFT_SCHEDULE_EVERY,
    events: { retryFor: env.EVENTS_RETRY_FOR, secretOverlapSeconds: env.EVENTS_SECRET_OVERLAP_SECONDS },
    outboundAllowHosts: env.OUTBOUND_ALLOW_HOSTS ?? [],
    taskQueue,
    apiTokens: env.GATEWAY_API_TOKENS,
    codecTokens: env.GATEWAY_CODEC_TOKENS,
    codecCorsOrigins: env.GATEWAY_CODEC_CORS_ORIGINS.map((origin) => new URL(origin).origin),
    codecHosts: [
      ...env.GATEWAY_CODEC_HOSTS,
      // A wildcard bind address is no name a client uses.
      ...(['0.0.0.0', '::', '[::]'].includes(env.GATEWAY_HOST) ? [] : [env.GATEWAY_HOST]),
      ...(env.GATEWAY_PUBLIC_URL ? [new URL(env.GATEWAY_PUBLIC_URL).hostname] : []),
    ],
    publicUrl: env.GATEWAY_PUBLIC_URL?.replace(/\/+$/, ''),
    webhookBodyLimitBytes: env.GATEWAY_WEBHOOK_BODY_LIMIT,
    webhookSecretGraceSeconds: env.GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS,
    webhookToleranceSeconds: env.GATEWAY_WEBHOOK_TOLERANCE_SECONDS,
    webhookInboxRetentionSeconds: env.GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS * 86_400,
    deployers: deployerReadinessOf(env),
  };
}
