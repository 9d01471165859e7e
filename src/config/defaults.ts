/**
 * The default of every setting that has one, written once: the configuration's schema
 * (src/config/*.ts) applies them, code that runs without a configuration (a client's task queue, a
 * platform client's deadline, an activity without options) falls back to them, and the CLI's help
 * text and docs/configuration.md quote them. No imports, so that CLI help and any layer may read it
 * (workflows and src/domain keep theirs: see src/domain/transfer-limit.ts).
 */
export const DEFAULTS = {
  DATA_DIR: '.data',
  TEMPORAL_NAMESPACE: 'default',
  TEMPORAL_TASK_QUEUE: 'tenant-provisioning',
  TEMPORAL_DEV_PORT: 7233,
  TEMPORAL_UI_PORT: 8233,
  LOG_LEVEL: 'info',
  PARENT_KEY_REFRESH_MS: 5_000,
  PLATFORM_TIMEOUT_MS: 10_000,
  PLATFORM_RATE_LIMIT_PER_SECOND: 20,
  PLATFORM_TENANT_KEY_LIMIT: 3,
  PAYLOAD_CODEC: 'auto',
  RESUME_BALANCE_FLOOR_MICRO_USD: '0',
  GATEWAY_PORT: 8080,
  GATEWAY_HOST: '127.0.0.1',
  GATEWAY_OPS_HOST: '127.0.0.1',
  GATEWAY_WEBHOOK_BODY_LIMIT: 64 * 1024,
  GATEWAY_WEBHOOK_SECRET_GRACE_SECONDS: 3_600,
  GATEWAY_WEBHOOK_TOLERANCE_SECONDS: 300,
  GATEWAY_WEBHOOK_INBOX_RETENTION_DAYS: 30,
  WORKER_HEAP_GROWING_PERCENT: 20,
  ROTATION_DEPLOYER: 'notify',
  ROTATION_ENV_VAR: 'TENANT_API_KEY',
  DRIFT_POLICY: '',
  DRIFT_QUIET_PERIOD: '24h',
  DRIFT_ROTATION_MAX_AGE: '90d',
  DRIFT_SCHEDULE_EVERY: '1h',
  APPROVAL_TTL: '24h',
  EVENTS_RETRY_FOR: '24h',
  EVENTS_RETENTION_DAYS: 30,
  EVENTS_SECRET_OVERLAP_SECONDS: 86_400,
} as const;

/** Where clients connect when TEMPORAL_ADDRESS is unset and no dev stack chose one. */
export const TEMPORAL_ADDRESS_FALLBACK = 'localhost:7233';

/** CLOSE_DELAY when unset: with an OPERATORS list (production), and without one (the dev stack). */
export const SAFE_OPS_DEFAULTS = {
  withOperators: { CLOSE_DELAY: '30d' },
  withoutOperators: { CLOSE_DELAY: '0' },
} as const;
