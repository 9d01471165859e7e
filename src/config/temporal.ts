import { DEFAULTS, TEMPORAL_ADDRESS_FALLBACK } from './defaults.js';
import { area, hostPort, matching, optionalText, setting, text } from './helpers.js';

export const temporalSettings = area('temporal', {
  TEMPORAL_ADDRESS: setting(hostPort(), {
    description: 'Temporal frontend `host:port`.',
    unset: `\`${TEMPORAL_ADDRESS_FALLBACK}\``,
    devStack: 'a local Temporal dev server it starts',
  }),
  TEMPORAL_NAMESPACE: setting(text(DEFAULTS.TEMPORAL_NAMESPACE), { description: 'Temporal namespace.' }),
  TEMPORAL_API_KEY: setting(optionalText(), {
    description: 'API key for Temporal Cloud (implies TLS).',
    secret: true,
    unset: 'no API key',
  }),
  TEMPORAL_TASK_QUEUE: setting(
    matching(/^[A-Za-z0-9._-]{1,200}$/, 'letters, digits, . _ - only', DEFAULTS.TEMPORAL_TASK_QUEUE),
    { description: 'Task queue the worker polls and every client starts workflows on.' },
  ),
});

/**
 * Read by @temporalio/envconfig exactly as the Temporal CLI reads them (TLS / mTLS, profiles, gRPC
 * metadata, codec): handed over in `Config.temporalEnv`, not validated here, never reported unknown.
 */
export const TEMPORAL_ENVCONFIG_VARIABLES = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_API_KEY',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
  'TEMPORAL_CODEC_ENDPOINT',
  'TEMPORAL_CODEC_AUTH',
  'TEMPORAL_TLS',
] as const;
export const TEMPORAL_ENVCONFIG_PREFIXES = ['TEMPORAL_TLS_', 'TEMPORAL_GRPC_META_'] as const;

/** TEMPORAL_* variables (and the home directories of the config file), handed to @temporalio/envconfig. */
export function temporalEnvOf(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        (entry[0].startsWith('TEMPORAL_') || ['HOME', 'XDG_CONFIG_HOME', 'APPDATA'].includes(entry[0])),
    ),
  );
}
