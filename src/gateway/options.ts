import { z } from 'zod';
import { deployerReadinessOf, type DeployerReadiness, type RotationDeployerEnv } from '../client/deployer-readiness.js';
import type { OperatorDirectory } from '../secrets/operators.js';
import type { PlatformClient } from '../platform/index.js';
import type { ApprovalAction } from '../secrets/safe-ops-config.js';
import type { AllowHosts } from '../infra/outbound/rule.js';

/**
 * The gateway's settings: this shape is part of src/config.ts's schema (the only reader of
 * process.env); entry points pass the validated values down as a typed `GatewayOptions`.
 */
const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const list = (value: unknown) =>
  typeof value === 'string'
    ? value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '')
    : value;

export const MIN_TOKEN_LENGTH = 32;

export const gatewayConfigShape = {
  GATEWAY_PORT: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(0).max(65535).default(8080))
    .describe('Port the gateway listens on (0 picks a free one).'),
  GATEWAY_HOST: z
    .preprocess(emptyToUndefined, z.string().default('127.0.0.1'))
    .describe('Interface the gateway binds (0.0.0.0 in a container).'),
  GATEWAY_API_TOKENS: z
    .preprocess(
      emptyToUndefined,
      z.preprocess(
        list,
        z
          .array(z.string().min(MIN_TOKEN_LENGTH, `each token must be at least ${MIN_TOKEN_LENGTH} characters`))
          .default([]),
      ),
    )
    .describe(
      'Comma-separated bearer tokens of signup backends for /v1 (several, so one can be ' +
        'rotated at a time). Unset: /v1 refuses every call.',
    ),
  GATEWAY_CODEC_TOKENS: z
    .preprocess(
      emptyToUndefined,
      z.preprocess(
        list,
        z
          .array(z.string().min(MIN_TOKEN_LENGTH, `each token must be at least ${MIN_TOKEN_LENGTH} characters`))
          .default([]),
      ),
    )
    .describe(
      'Comma-separated operator bearer tokens for /codec/*. Unset: only loopback ' +
        'clients may use the codec (local Web UI).',
    ),
  GATEWAY_CODEC_CORS_ORIGINS: z
    .preprocess(
      emptyToUndefined,
      z.preprocess(
        list,
        z.array(z.url({ protocol: /^https?$/, error: 'each origin must be an http(s) URL' })).default([]),
      ),
    )
    .describe(
      'Comma-separated Web UI origins (scheme://host:port) allowed to call the codec ' +
        'endpoint from a browser. Unset: none ' +
        '(the CLI needs no CORS); `npm start` adds the origin its Web UI really got.',
    ),
  GATEWAY_PUBLIC_URL: z
    .preprocess(
      emptyToUndefined,
      z
        .url({
          protocol: /^https?$/,
          error: 'must be the http(s) base URL the platform and clients reach the gateway at',
        })
        .optional(),
    )
    .describe('Public base URL of the gateway: webhook receiver URLs and status URLs are built from it.'),
  GATEWAY_CODEC_HOSTS: z
    .preprocess(
      emptyToUndefined,
      z.preprocess(
        list,
        z
          .array(
            z
              .string()
              .regex(/^[A-Za-z0-9.-]+$|^\[[0-9A-Fa-f:.]+\]$/, 'each must be a host name or address, without port'),
          )
          .default([]),
      ),
    )
    .describe(
      'Comma-separated host names the codec endpoint answers to (the Host header), besides loopback names, ' +
        "GATEWAY_HOST and GATEWAY_PUBLIC_URL's host: a DNS-rebinding defence.",
    ),
  GATEWAY_WEBHOOK_BODY_LIMIT: z
    .preprocess(
      emptyToUndefined,
      z.coerce
        .number()
        .int()
        .min(1024)
        .max(10 * 1024 * 1024)
        .default(64 * 1024),
    )
    .describe('Largest registry delivery body accepted, in bytes.'),
  GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS: z
    .preprocess(
      emptyToUndefined,
      z.coerce
        .number()
        .int()
        .min(0)
        .max(7 * 86_400)
        .default(3_600),
    )
    .describe(
      "How long a replaced or deleted webhook's secret is still accepted (platform retries of its deliveries).",
    ),
  GATEWAY_WEBHOOK_TOLERANCE_SECONDS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(30).max(86_400).default(300))
    .describe(
      "How far a delivery's body timestamp may be from the gateway's clock, either way, " +
        'before it is refused as a replay (Standard Webhooks: 5 minutes).',
    ),
  GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(1).max(3_650).default(30))
    .describe(
      'Processed webhook inbox rows older than this many days are pruned (batched, ' +
        'every 10 minutes); unprocessed rows are kept.',
    ),
  PLATFORM_PERSONAL_TOKEN: z
    .preprocess(
      emptyToUndefined,
      z.string().startsWith('sv_', 'must be a personal access token (starts with sv_)').optional(),
    )
    .describe('Personal access token (sv_) for registry webhook management (the contract requires one).'),
};
export const gatewayEnvSchema = z.object(gatewayConfigShape);
export type GatewayEnv = z.infer<typeof gatewayEnvSchema>;

/** What the app factory needs, in its own words (no env names). */
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
  /** OPERATORS: who an operator bearer is (absent or empty: typed names, as before). */
  operators?: OperatorDirectory;
  /** CLOSE_DELAY: a close without `after` waits this long (absent: `0`, at once). */
  closeDelay?: string;
  /** APPROVAL_POLICY / APPROVAL_TTL (absent: no approvals). */
  approvals?: { actions: ReadonlySet<ApprovalAction>; ttlMs: number };
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
  /** The platform with the parent key, paced under the fleet budget, for import plans (absent: /v1/imports answers 503). */
  importLister?: PlatformClient;
  /** Host names the codec answers to besides loopback ones (GATEWAY_CODEC_HOSTS, GATEWAY_HOST, the public URL's). */
  codecHosts?: readonly string[];
  /** OUTBOUND_ALLOW_HOSTS: inward hosts a subscription URL may name (absent: none). */
  outboundAllowHosts?: AllowHosts;
  /** TRANSFER_MAX_MICRO_USD: larger amounts are 400 INVALID_INPUT at every /v1 edge (absent: its default). */
  maxTransferMicroUsd?: string;
  /** DRIFT_SCHEDULE_EVERY: the interval of a drift schedule made without one (absent: 1h). */
  driftScheduleEvery?: string;
  /** EVENTS_RETRY_FOR (a replay's retry policy) and EVENTS_SECRET_OVERLAP_SECONDS (absent: their defaults). */
  events?: { retryFor: string; secretOverlapSeconds: number };
}

export function gatewayOptionsOf(
  env: GatewayEnv & RotationDeployerEnv & { OUTBOUND_ALLOW_HOSTS?: AllowHosts },
  taskQueue: string,
): GatewayOptions {
  return {
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
