/**
 * The one logger factory. Two layers keep tenant credentials out of logs:
 *  1. pino `redact` censors known secret-bearing fields by path (`[redacted]`);
 *  2. a final safety net (`hooks.streamWrite`) masks anything shaped like a platform token
 *     (`svsk_`, `svpk_`, `sv_`) in the finished JSON line: messages, fields at any depth, error
 *     messages and stacks, Temporal metadata.
 * Paths catch secrets whatever their shape; the pattern catches tokens wherever they end up.
 */
import type { Logger as TemporalLogger, LogLevel as TemporalLogLevel, LogMetadata } from '@temporalio/common';
import { pino, type DestinationStream, type Level, type LevelWithSilent, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

export const REDACTED = '[redacted]';

const SECRET_FIELDS = [
  'authorization',
  'Authorization',
  'token',
  'secret',
  'password',
  'apiKey',
  'platformKey',
  'personalToken',
  'sealed',
  'cookie',
];

/**
 * Redaction paths (also for a Fastify `logger` config): each secret field at the top and one level down, and in
 * headers.
 */
export const REDACT_PATHS: readonly string[] = [
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]),
  ...['authorization', 'Authorization', 'cookie', '["x-api-key"]', '["set-cookie"]'].flatMap((header) => {
    const at = header.startsWith('[') ? header : `.${header}`;
    return [`headers${at}`, `*.headers${at}`, `req.headers${at}`, `request.headers${at}`, `res.headers${at}`];
  }),
];

// A platform token as it appears in text or in a JSON string: one of the three prefixes, then the
// RFC 6750 bearer-token alphabet. It must start a word, so `csv_file` is left alone; in JSON text a
// token may also follow an escape such as `\n` or `\u00a0`.
const TOKEN_PATTERN = /(?:(?<![A-Za-z0-9])|(?<=\\[bfnrt])|(?<=\\u[0-9A-Fa-f]{4}))(svsk|svpk|sv)_[A-Za-z0-9\-._~+/]+=*/g;

/** Replaces every platform token in `text` with `<prefix>_[redacted]`, keeping the kind visible. */
export function maskTokens(text: string): string {
  return text.replace(TOKEN_PATTERN, `$1_${REDACTED}`);
}

import type { LogFormat } from '../domain/log-formats.js';
export type { LogFormat } from '../domain/log-formats.js';

export interface LoggerOptions {
  /** Defaults to `info`. */
  level?: LevelWithSilent;
  /** `json` (production: one JSON object a line) or `pretty` (the dev stack's console). Defaults to `json`. */
  format?: LogFormat;
  /** Defaults to stdout. Tests pass a stream that captures lines. */
  destination?: DestinationStream;
}

const VERBOSE_LEVELS: ReadonlySet<string> = new Set(['debug', 'trace']);

/**
 * An error as a log field: its type, message, code and causes. The stack only when debug is on,
 * so a warning (an activity attempt that failed and will be retried) stays one line.
 */
function errorField(withStack: boolean) {
  const describe = (value: unknown, depth: number): unknown => {
    if (!(value instanceof Error)) return value;
    const { code, type } = value as { code?: unknown; type?: unknown };
    return {
      type: value.name,
      message: value.message,
      ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
      ...(typeof type === 'string' ? { failureType: type } : {}),
      ...(value.cause !== undefined && depth < 3 ? { cause: describe(value.cause, depth + 1) } : {}),
      ...(withStack && value.stack ? { stack: value.stack } : {}),
    };
  };
  return (value: unknown) => describe(value, 0);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const verbose = VERBOSE_LEVELS.has(level);
  const serializeError = errorField(verbose);
  const pinoOptions = {
    level,
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    // Temporal puts errors under `error`; serialize them like `err` instead of as `{}`.
    serializers: { err: serializeError, error: serializeError },
    hooks: { streamWrite: maskTokens },
  };
  if (options.format === 'pretty') {
    // The masked JSON line is what pino-pretty formats: the token net holds in both formats.
    const destination = pretty({
      sync: true,
      destination: options.destination ?? 1,
      colorize: options.destination === undefined && process.stdout.isTTY,
      singleLine: !verbose,
      // Errors inline with the other fields (one line), not as an indented block.
      ...(verbose ? {} : { errorLikeObjectKeys: [] }),
      ignore: 'pid,hostname',
      translateTime: 'SYS:HH:MM:ss.l',
    });
    return pino(pinoOptions, destination);
  }
  return options.destination === undefined ? pino(pinoOptions) : pino(pinoOptions, options.destination);
}

/** The process's logger from its configuration (LOG_LEVEL, LOG_FORMAT). */
export function loggerOf(config: { LOG_LEVEL: LevelWithSilent; LOG_FORMAT?: LogFormat | undefined }): Logger {
  return createLogger({ level: config.LOG_LEVEL, format: config.LOG_FORMAT ?? 'json' });
}

const temporalLevels = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
} as const satisfies Record<TemporalLogLevel, Level>;

/** Adapts a pino logger to Temporal's `Logger` (for `Runtime.install({ logger })`), meta as fields. */
export function toTemporalLogger(logger: Logger): TemporalLogger {
  const log = (level: TemporalLogLevel, message: string, meta?: LogMetadata): void => {
    logger[temporalLevels[level]]({ ...meta }, message);
  };
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}

/**
 * The logger for `Runtime.install`: the SDK's own logs (worker state, failed activity attempts,
 * Core's warnings) through the same redacting logger and format, one level quieter at `info`.
 */
export function temporalSdkLogger(logger: Logger, level: LevelWithSilent): TemporalLogger {
  return toTemporalLogger(logger.child({ component: 'temporal-sdk' }, { level: level === 'info' ? 'warn' : level }));
}
