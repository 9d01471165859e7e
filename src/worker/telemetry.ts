import type { Logger as TemporalLogger, LogLevel as TemporalLogLevel, LogMetadata } from '@temporalio/common';
import type { TelemetryOptions } from '@temporalio/worker';
import type { LevelWithSilent } from 'pino';
import { toTemporalLogger, type Logger } from '../log.js';

/**
 * The worker Runtime's logger: lines from our workflows and activities (`log` from
 * @temporalio/workflow, replay-aware) keep the configured level, so a finished onboarding's info line
 * shows at LOG_LEVEL=info; the SDK's own chatter (bundling, state changes) is one level quieter.
 */
export function workerRuntimeLogger(logger: Logger, level: LevelWithSilent): TemporalLogger {
  const ours = toTemporalLogger(logger);
  const sdk = toTemporalLogger(logger.child({ component: 'temporal-sdk' }, { level: level === 'info' ? 'warn' : level }));
  const log = (at: TemporalLogLevel, message: string, meta?: LogMetadata): void => {
    const component = meta?.sdkComponent;
    (component === 'workflow' || component === 'activity' ? ours : sdk).log(at, message, meta);
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

/** Seconds from a few seconds to a day: onboardings take seconds, rotations wait hours for quiet. */
const DURATION_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600];

/**
 * The Prometheus exporter on WORKER_METRICS_ADDRESS: the SDK's own metrics plus our outcome
 * counters and durations (workflows/outcomes.ts), which the workflows record through their metric meter.
 */
export function workerTelemetry(metricsAddress: string | undefined): TelemetryOptions {
  if (!metricsAddress) return {};
  return { metrics: { prometheus: { bindAddress: metricsAddress, histogramBucketOverrides: { tpo_duration_seconds: DURATION_BUCKETS } } } };
}
