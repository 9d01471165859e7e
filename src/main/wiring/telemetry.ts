import type { LogLevel, Logger as TemporalLogger } from '@temporalio/common';
import { DefaultLogger, type TelemetryOptions } from '@temporalio/worker';
import type { LevelWithSilent } from 'pino';
import { platformTaskQueue } from '../../domain/ids.js';
import { temporalSdkLogger, toTemporalLogger, type Logger } from '../../infra/log.js';

/**
 * The worker Runtime's logger: lines from our workflows and activities (`log` from
 * @temporalio/workflow, replay-aware) keep the configured level, so a finished onboarding's info line
 * shows at LOG_LEVEL=info; the SDK's own chatter (bundling, state changes) is one level quieter.
 */
export function workerRuntimeLogger(logger: Logger, level: LevelWithSilent): TemporalLogger {
  const ours = toTemporalLogger(logger);
  const sdk = temporalSdkLogger(logger, level);
  // The SDK's DefaultLogger supplies the per-level methods and drops what is below LOG_LEVEL before anything else
  // runs (the SDK logs every activity's start and end at DEBUG); pino filters the SDK's own lines one level further.
  return new DefaultLogger(RUNTIME_LEVELS[level], ({ level: at, message, meta }) => {
    if (expectedOfPlatformWorker(message, meta)) return;
    const component = meta?.sdkComponent;
    (component === 'workflow' || component === 'activity' ? ours : sdk).log(at, message, meta);
  });
}

/** The least severe line the Runtime's logger passes on, for each LOG_LEVEL (silent: errors, which pino drops). */
const RUNTIME_LEVELS = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  fatal: 'ERROR',
  silent: 'ERROR',
} as const satisfies Record<LevelWithSilent, LogLevel>;

/**
 * The platform queue's worker runs activities only, by design (src/main/wiring/platform-worker.ts), so the SDK's
 * warning that it polls no workflow tasks says nothing is wrong: dropped by its exact text, for that queue's worker
 * alone. The same warning from any other worker (one that lost its workflows) still shows.
 */
const NO_WORKFLOWS = 'No workflows registered, not polling for workflow tasks';
const PLATFORM_QUEUE_SUFFIX = platformTaskQueue('');

function expectedOfPlatformWorker(message: string, meta: Record<string, unknown> | undefined): boolean {
  const taskQueue = meta?.['taskQueue'];
  return (
    message === NO_WORKFLOWS &&
    meta?.['sdkComponent'] === 'worker' &&
    typeof taskQueue === 'string' &&
    taskQueue.endsWith(PLATFORM_QUEUE_SUFFIX)
  );
}

/** Seconds from a few seconds to a day: onboardings take seconds, rotations wait hours for quiet. */
const DURATION_BUCKETS = [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600];

/**
 * The Prometheus exporter on WORKER_METRICS_ADDRESS: the SDK's own metrics plus our outcome
 * counters and durations (workflows/outcomes.ts), which the workflows record through their metric meter.
 */
export function workerTelemetry(metricsAddress: string | undefined): TelemetryOptions {
  if (!metricsAddress) return {};
  return {
    metrics: {
      prometheus: { bindAddress: metricsAddress, histogramBucketOverrides: { tpo_duration_seconds: DURATION_BUCKETS } },
    },
  };
}
