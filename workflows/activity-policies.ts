import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { FailureCode } from '../src/domain/failures.js';

/**
 * Every activity option of our workflows, named for the kind of step it fits. A regular activity's
 * retry policy is written into history with its ScheduleActivityTask command, and a local activity's
 * localRetryThreshold decides whether a long backoff becomes a timer in history: so a workflow that
 * changes policy does it behind `patched()`. The small differences between the database policies are
 * kept for that reason (each was recorded by running workflows), not by taste.
 */

/** Database steps run as local activities inside the workflow task: short, retried quickly, bounded. */
export const databaseStep = {
  startToCloseTimeout: '30s',
  localRetryThreshold: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 50 },
} as const satisfies LocalActivityOptions;

/** Drift reads whole pages of records: a longer timeout; an unknown tenant is final at once. */
export const driftDatabaseStep = {
  startToCloseTimeout: '60s',
  localRetryThreshold: '10s',
  retry: {
    initialInterval: '200ms',
    backoffCoefficient: 2,
    maximumInterval: '30s',
    maximumAttempts: 30,
    nonRetryableErrorTypes: [FailureCode.TENANT_NOT_FOUND],
  },
} as const satisfies LocalActivityOptions;

/** rotateFleet's page reads (default local retry threshold: its backoff never becomes a timer before 1m). */
export const fleetDatabaseStep = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '30s', maximumAttempts: 50 },
} as const satisfies LocalActivityOptions;

/** A close's wait for open rotations: polled, so each read gives up sooner. */
export const closeWaitDatabaseStep = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '10s', maximumAttempts: 20 },
} as const satisfies LocalActivityOptions;

/** Input validation: a pure check, retried only for a worker hiccup. */
export const inputCheck = {
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 5 },
} as const satisfies LocalActivityOptions;

/** One platform call on the rate-limited `<queue>-platform` task queue (see src/domain/ids.ts platformTaskQueue). */
export function platformCall(taskQueue: string) {
  return {
    taskQueue,
    startToCloseTimeout: '30s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 30 },
  } as const satisfies ActivityOptions;
}

/**
 * The quiet gate's watch (watchKeyUsage): its retries are the gate's looks, each after the `nextRetryDelay` the
 * attempt before asked for, so it has no attempt limit. A platform failure is retried as platformCall's are; the
 * watch ends by itself at the first look after `watchMs`, and gives up half an hour after that if the platform
 * never answers (about platformCall's own attempts), failing as a look would.
 */
export function quietGateWatch(taskQueue: string, watchMs: number) {
  return {
    taskQueue,
    startToCloseTimeout: '30s',
    scheduleToCloseTimeout: Math.max(0, Math.round(watchMs)) + 30 * 60_000,
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
  } as const satisfies ActivityOptions;
}

/** The whole sub-account list in one activity, paced page by page: allow it time. */
export function platformListing(taskQueue: string) {
  return {
    taskQueue,
    startToCloseTimeout: '30m',
    retry: { initialInterval: '5s', maximumInterval: '2m', maximumAttempts: 10 },
  } as const satisfies ActivityOptions;
}

/** The sub-account scan of onboarding: long, heartbeating, retried with patience. */
export const subaccountScan = {
  startToCloseTimeout: '2h',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 50 },
} as const satisfies ActivityOptions;

/**
 * A deploy of a rotated key: retried until the parent's endpoint (notify) or the platform
 * (project-env) answers, no attempt limit; the operator aborts a rotation that cannot deploy.
 */
export const notifyDeploy = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '5m' },
} as const satisfies ActivityOptions;

export function projectEnvDeploy(taskQueue: string) {
  return { ...notifyDeploy, taskQueue } as const satisfies ActivityOptions;
}

/** suspend / resume: one lifecycle call, bounded. */
export const lifecycleCall = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 20 },
} as const satisfies ActivityOptions;

/**
 * closeTenant's cleanup: no attempt limit (every step is safe to repeat, and a close must not give up
 * half-way); a short maximum interval, so a close resumes within seconds once the platform answers.
 */
export const closeCleanup = {
  startToCloseTimeout: '1m',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s' },
} as const satisfies ActivityOptions;
