import { deployerReadinessOf, type RotationDeployerEnv } from '../../client/deployer-readiness.js';
import type { GatewayEnv } from '../../config/gateway.js';
import type { GatewayOptions } from '../../gateway/options.js';
import type { AllowHosts } from '../../domain/outbound-rule.js';

/** The app factory's options from the configuration (the rest, platform clients and policies, by the entry). */
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
