import type { DeployerReadiness } from '../client/keys/deployer-readiness.js';
import type { OperatorDirectory } from '../secrets/operators.js';
import type { PlatformClient } from '../platform/index.js';
import type { ApprovalAction } from '../config/safe-ops.js';
import type { AllowHosts } from '../domain/outbound-rule.js';
import type { Resolver } from '../infra/outbound/resolve.js';

/**
 * What the gateway app factory takes, in its own words (no env names). Built from the configuration by
 * src/main/wiring/gateway-options.ts's gatewayOptionsOf, once: every setting's option is required, so nothing here
 * applies a default again. Only the platform clients (absent: those routes answer 503) and a test's resolver are
 * optional.
 */
export interface GatewayOptions {
  taskQueue: string;
  apiTokens: readonly string[];
  codecTokens: readonly string[];
  codecCorsOrigins: readonly string[];
  publicUrl: string | undefined;
  webhookBodyLimitBytes: number;
  webhookSecretGraceSeconds: number;
  /** A delivery whose body timestamp is further than this from now (either way) is refused: a replay. */
  webhookToleranceSeconds: number;
  /** Processed inbox rows older than this are pruned (in batches, by the gateway's pruner). */
  webhookInboxRetentionSeconds: number;
  /** Which rotation deployers this configuration can run: `POST …/rotate` refuses the others at start. */
  deployers: DeployerReadiness;
  /** OPERATORS: who an operator bearer is (empty: typed names, as before). */
  operators: OperatorDirectory;
  /** CLOSE_DELAY: a close without `after` waits this long (`0`: at once). */
  closeDelay: string;
  /**
   * RESUME_BALANCE_FLOOR_MICRO_USD: a resume of a tenant (on no plan, or a plan without its own floor) whose wallet
   * `preflightPlatform` shows below it is 409 BALANCE_BELOW_FLOOR before any run (`0`: no check).
   */
  resumeBalanceFloorMicroUsd: string;
  /** APPROVAL_POLICY / APPROVAL_TTL (no actions: no approvals). */
  approvals: { actions: ReadonlySet<ApprovalAction>; ttlMs: number };
  /**
   * The platform with the parent key, asked read-only by `POST /v1/tenants?dryRun=true` and
   * `GET /v1/tenants/:ref/wallet` (absent: they answer 503).
   */
  preflightPlatform?: PlatformClient;
  /**
   * The platform with the parent's personal token (PLATFORM_PERSONAL_TOKEN), for registry webhook management
   * (absent: /v1/webhooks answers 503 where it would call the platform). A tenant's project is checked with
   * `preflightPlatform` (the parent key).
   */
  webhookPlatform?: PlatformClient;
  /**
   * The platform with the parent key, paced under the fleet budget, for import plans (absent: /v1/imports answers 503).
   */
  importLister?: PlatformClient;
  /** Host names the codec answers to besides loopback ones (GATEWAY_CODEC_HOSTS, GATEWAY_HOST, the public URL's). */
  codecHosts: readonly string[];
  /** OUTBOUND_ALLOW_HOSTS: inward hosts a subscription URL may name. */
  outboundAllowHosts: AllowHosts;
  /**
   * DNS for a subscription URL's host name, checked when it is given (absent: the system resolver); tests inject one.
   */
  outboundResolve?: Resolver;
  /** TRANSFER_MAX_MICRO_USD: larger amounts are 400 INVALID_INPUT at every /v1 edge. */
  maxTransferMicroUsd: string;
  /** PLATFORM_TENANT_KEY_LIMIT: a plan whose slots do not fit it is 400 INVALID_INPUT, written or carried out. */
  tenantKeyLimit: number;
  /** DRIFT_SCHEDULE_EVERY: the interval of a drift schedule made without one. */
  driftScheduleEvery: string;
  /** EVENTS_RETRY_FOR (a replay's retry policy) and EVENTS_SECRET_OVERLAP_SECONDS. */
  events: { retryFor: string; secretOverlapSeconds: number };
}
