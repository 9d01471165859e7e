/**
 * The log formats LOG_FORMAT takes. On its own so that the configuration (which every tenantctl
 * command loads) does not load pino and pino-pretty: only a process that logs does (log.ts).
 */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
