import { z } from 'zod';
import { driftConfigShape } from '../activities/drift/options.js';
import { gatewayConfigShape } from './gateway/options.js';
import { LOG_FORMATS } from './infra/log-formats.js';
import { rotationConfigShape } from '../activities/rotation-options.js';
import { safeParseMasterKeys } from './secrets/master-keys.js';
import { safeOpsConfigShape, safeOpsProblems } from './secrets/safe-ops-config.js';
import { isHttpsOrLoopback, outboundConfigProblems, outboundConfigShape } from './infra/outbound/rule.js';
import { transferLimitConfigShape } from './domain/transfer-limit.js';

/**
 * The only reader of process.env: every entry point calls loadConfig(process.env) once and passes
 * the result down. Every field is described; every problem is reported at once, one line each.
 * The config object holds secrets (platform key, master keys): never log it.
 */

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const optionalString = z.preprocess(emptyToUndefined, z.string().optional());

const postgresUrl = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .refine((value) => {
      try {
        const url = new URL(value);
        return (
          (url.protocol === 'postgres:' || url.protocol === 'postgresql:') &&
          url.hostname !== '' &&
          url.pathname.length > 1
        );
      } catch {
        return false;
      }
    }, 'must be a URL like postgres://user:password@host:5432/database')
    .optional(),
);

const hostPort = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .regex(/^[A-Za-z0-9.-]+:[0-9]{1,5}$|^\[[0-9a-fA-F:]+\]:[0-9]{1,5}$/, 'must be host:port, e.g. localhost:7233')
    .optional(),
);

const port = (fallback: number) =>
  z.preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(0).max(65535).default(fallback));

export const configSchema = z.object({
  DATABASE_URL: postgresUrl.describe(
    'Postgres for the parent records. Unset: an embedded Postgres is started under ' +
      'DATA_DIR (dev) or a temp dir (tests).',
  ),
  DATA_DIR: z
    .preprocess(emptyToUndefined, z.string().default('.data'))
    .describe('Where the dev stack keeps embedded Postgres data and the Temporal dev server database.'),
  TEMPORAL_ADDRESS: hostPort.describe(
    'Temporal frontend host:port. Unset: the dev stack starts a local Temporal dev server (npm start / tests).',
  ),
  TEMPORAL_NAMESPACE: z.preprocess(emptyToUndefined, z.string().default('default')).describe('Temporal namespace.'),
  TEMPORAL_API_KEY: optionalString.describe('API key for Temporal Cloud (implies TLS).'),
  TEMPORAL_TASK_QUEUE: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,200}$/, 'letters, digits, . _ - only')
        .default('tenant-provisioning'),
    )
    .describe('Task queue the worker polls and clients start workflows on.'),
  TEMPORAL_CLI_PATH: optionalString.describe(
    'Path to a `temporal` CLI binary for the dev server (else PATH, cache, go install).',
  ),
  TEMPORAL_UI_PORT: port(8233).describe(
    'Port for the Temporal Web UI of the dev server (a free one is picked if taken).',
  ),
  TEMPORAL_DEV_PORT: port(7233).describe('Port for the dev server frontend (a free one is picked if taken).'),
  LOG_LEVEL: z
    .preprocess(emptyToUndefined, z.enum(logLevels).default('info'))
    .describe(`One of ${logLevels.join(', ')}.`),
  LOG_FORMAT: z
    .preprocess(emptyToUndefined, z.enum(LOG_FORMATS).optional())
    .describe('json (one JSON object a line) or pretty (human-readable). Unset: json, pretty under npm start.'),
  PLATFORM_BASE_URL: z
    .preprocess(
      emptyToUndefined,
      z
        .url({ protocol: /^https?$/, error: 'must be an http(s) URL ending in /api/v1' })
        .refine(
          isHttpsOrLoopback,
          'must be https (plain http only to a loopback host: the parent key goes with every call)',
        )
        .optional(),
    )
    .describe('Platform API base including the version prefix. Unset in the dev stack: the simulator is started.'),
  PLATFORM_API_KEY: z
    .preprocess(
      emptyToUndefined,
      z.string().startsWith('svpk_', 'must be a platform key (starts with svpk_)').optional(),
    )
    .describe(
      'Bootstrap only: the parent platform key imported (sealed) into our records on ' +
        'first start; after that, processes read the current key from the records ' +
        '(tenantctl parent-key).',
    ),
  PARENT_KEY_REFRESH_MS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(100).max(600_000).default(5_000))
    .describe(
      'How often workers and gateways re-read the current parent platform key from our ' +
        'records, in ms (and at once on a 401).',
    ),
  SECRETS_KEYS: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          const parsed = safeParseMasterKeys(value);
          if (!parsed.ok) for (const problem of parsed.problems) ctx.addIssue({ code: 'custom', message: problem });
        })
        .optional(),
    )
    .describe(
      'Master keys for the vault and payload codec: comma-separated keyId:base64(32 ' +
        'bytes); the first encrypts, all decrypt.',
    ),
  PAYLOAD_CODEC: z
    .preprocess(emptyToUndefined, z.enum(['auto', 'on', 'off']).default('auto'))
    .describe('Encrypt every Temporal payload with SECRETS_KEYS: auto (when SECRETS_KEYS is set), on (required), off.'),
  RESUME_BALANCE_FLOOR_MICRO_USD: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^(0|[1-9][0-9]{0,29})$/, 'must be a whole number of micro-USD, e.g. 1000000')
        .default('0'),
    )
    .describe('resume refuses a tenant whose wallet balance is below this (micro-USD); 0 checks nothing.'),
  PLATFORM_TIMEOUT_MS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(100).max(120_000).default(10_000))
    .describe('Per-request deadline of platform calls, in ms.'),
  GATEWAY_OPS_PORT: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(0).max(65535).optional())
    .describe(
      'A second gateway listener for /readyz and /metrics only (0 picks a free port); ' +
        'unset: they are served on GATEWAY_PORT.',
    ),
  GATEWAY_OPS_HOST: z
    .preprocess(emptyToUndefined, z.string().default('127.0.0.1'))
    .describe('Interface of the ops listener (keep it off the public network).'),
  WORKER_MAX_CACHED_WORKFLOWS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(2).max(100_000).optional())
    .describe(
      "Workflows kept in the worker's sticky cache; unset: the SDK's default, derived from the V8 heap limit " +
        '(none above 200 MB of heap: set this when capping the heap with NODE_OPTIONS, see the runbook).',
    ),
  WORKER_HEAP_GROWING_PERCENT: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(0).max(400).default(20))
    .describe(
      "How far (percent) the worker's V8 heaps may grow past what the last collection kept; lower holds RSS " +
        "down at some GC cost, 0 leaves V8's own heuristics (see the runbook's Worker memory).",
    ),
  WORKER_METRICS_ADDRESS: hostPort.describe(
    'host:port for the worker SDK Prometheus exporter (e.g. 0.0.0.0:9464); unset: off.',
  ),
  ...rotationConfigShape,
  ...gatewayConfigShape,
  ...driftConfigShape,
  ...safeOpsConfigShape,
  ...outboundConfigShape,
  ...transferLimitConfigShape,
  EVENTS_LOW_BALANCE_MICRO_USD: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[1-9][0-9]{0,29}$/, 'must be a positive whole number of micro-USD')
        .optional(),
    )
    .describe(
      'wallet.low_balance fires below this balance for tenants without a threshold of ' +
        'their own; unset: only those with one.',
    ),
  EVENTS_RETRY_FOR: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[1-9][0-9]*(s|m|h|d)$/, 'must be a duration like 30m, 24h, 3d')
        .default('24h'),
    )
    .describe('How long one event delivery is retried (backoff, Retry-After honoured) before it is marked failed.'),
  EVENTS_RETENTION_DAYS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(1).max(3650).default(30))
    .describe(
      'Events whose every delivery is final (delivered or failed) are deleted with their delivery rows this many ' +
        'days after they occurred (the dispatcher prunes when idle); pending ones are kept.',
    ),
  EVENTS_SECRET_OVERLAP_SECONDS: z
    .preprocess(emptyToUndefined, z.coerce.number().int('must be a whole number').min(0).max(2_592_000).default(86_400))
    .describe('After `events rotate-secret`, the old secret keeps signing (both signatures sent) this many seconds.'),
});

export type Config = z.infer<typeof configSchema> & {
  /** TEMPORAL_* variables (and HOME for the config file), handed to @temporalio/envconfig. */
  temporalEnv: Record<string, string>;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Validates the environment; throws ConfigError listing every problem (values are never echoed). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const known = Object.fromEntries(Object.keys(configSchema.shape).map((key) => [key, env[key]]));
  const parsed = configSchema.safeParse(known);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`));
  }
  const crossField = [...safeOpsProblems(parsed.data), ...outboundConfigProblems(parsed.data)];
  if (crossField.length) throw new ConfigError(crossField);
  const temporalEnv = Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        (entry[0].startsWith('TEMPORAL_') || ['HOME', 'XDG_CONFIG_HOME', 'APPDATA'].includes(entry[0])),
    ),
  );
  return { ...parsed.data, temporalEnv };
}

/** Human description of every setting, for `tenantctl config --help` and the README. */
export function describeConfig(): Array<{ name: string; description: string }> {
  return Object.entries(configSchema.shape).map(([name, schema]) => ({ name, description: schema.description ?? '' }));
}
