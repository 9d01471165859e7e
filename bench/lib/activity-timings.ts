import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/**
 * Where an activity's time goes, per activity type: how long it waited between being scheduled
 * and starting (slots, dispatch) and how long its own code ran. For local activities this is
 * the part of a workflow task spent outside the workflow code.
 */
export interface ActivityTiming {
  count: number;
  meanWaitMs: number;
  meanRunMs: number;
  p99RunMs: number;
}

export function createActivityTimings() {
  let samples = new Map<string, { waits: number[]; runs: number[] }>();
  const interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      async execute(input, next) {
        const started = Date.now();
        try {
          return await next(input);
        } finally {
          const { activityType, currentAttemptScheduledTimestampMs } = ctx.info;
          const entry = samples.get(activityType) ?? { waits: [], runs: [] };
          entry.waits.push(started - currentAttemptScheduledTimestampMs);
          entry.runs.push(Date.now() - started);
          samples.set(activityType, entry);
        }
      },
    },
  });
  return {
    interceptor,
    /** Timings since the last call, then starts afresh (one reading per phase). */
    take(): Record<string, ActivityTiming> {
      const taken = samples;
      samples = new Map();
      const mean = (xs: number[]) => Math.round((xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length)) * 10) / 10;
      return Object.fromEntries(
        [...taken.entries()].map(([type, { waits, runs }]) => {
          const sorted = [...runs].sort((a, b) => a - b);
          return [
            type,
            {
              count: runs.length,
              meanWaitMs: mean(waits),
              meanRunMs: mean(runs),
              p99RunMs: sorted[Math.ceil(0.99 * sorted.length) - 1] ?? 0,
            },
          ];
        }),
      );
    },
  };
}
