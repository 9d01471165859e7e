/**
 * The one logger factory. Two layers keep tenant credentials out of logs:
 *  1. pino `redact` censors known secret-bearing fields by path (`[redacted]`);
 *  2. a final safety net (`hooks.streamWrite`) masks anything shaped like a platform token
 *     (`svsk_`, `svpk_`, `sv_`) in the finished JSON line: messages, fields at any depth, error
 *     messages and stacks, Temporal metadata.
 * Paths catch secrets whatever their shape; the pattern catches tokens wherever they end up.
 */
import type { Logger as TemporalLogger, LogLevel as TemporalLogLevel, LogMetadata } from '@temporalio/common';
import { pino, stdSerializers, type DestinationStream, type Level, type LevelWithSilent, type Logger } from 'pino';

export type { Logger } from 'pino';

export const REDACTED = '[redacted]';

const SECRET_FIELDS = ['authorization', 'Authorization', 'token', 'secret', 'password', 'apiKey', 'platformKey', 'personalToken', 'sealed', 'cookie'];

/** Redaction paths (also for a Fastify `logger` config): each secret field at the top and one level down, and in headers. */
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

export interface LoggerOptions {
  /** Defaults to `info`. */
  level?: LevelWithSilent;
  /** Defaults to stdout. Tests pass a stream that captures lines. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const pinoOptions = {
    level: options.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: REDACTED },
    // Temporal puts errors under `error`; serialize them like `err` instead of as `{}`.
    serializers: { err: stdSerializers.err, error: stdSerializers.err },
    hooks: { streamWrite: maskTokens },
  };
  return options.destination === undefined ? pino(pinoOptions) : pino(pinoOptions, options.destination);
}

const temporalLevels = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const satisfies Record<
  TemporalLogLevel,
  Level
>;

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
