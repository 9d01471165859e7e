import type { Client } from '@temporalio/client';
import { DEFAULTS } from '../../src/config/defaults.js';
import type { PlatformClient } from '../../src/platform/index.js';
import type { DriftPolicies } from '../../src/domain/drift-kinds.js';
import { durationMs } from '../../src/domain/drift-policy.js';

/**
 * What drift activities need beyond ActivityDeps, read from configuration by the entry point and
 * passed in as `ActivityDeps.drift`. Without it: every kind is report-only, default timings, and
 * the running-workflow check falls back to our records.
 */
export interface DriftOptions {
  policies: DriftPolicies;
  /** An orphan key must show no use for this long before a fix may revoke it. */
  quietPeriodMs: number;
  /** An active key older than this with no rotation schedule is reported. */
  rotationMaxAgeMs: number;
  /**
   * Visibility (running onboarding / rotation / close workflows) and the rotation schedules. Built
   * by the worker from its own connection; without it, key_rotation_overdue is not checked and a
   * tenant whose record says an onboarding may be running is skipped.
   */
  temporal?: Client;
  /** The client that lists the parent's sub-accounts (paced: see paced-fetch.ts); default deps.platform. */
  listPlatform?: PlatformClient;
}

export const DEFAULT_DRIFT_OPTIONS: DriftOptions = {
  policies: {},
  // Without configuration (tests that build no options): shorter than DRIFT_QUIET_PERIOD's default.
  quietPeriodMs: 3_600_000,
  rotationMaxAgeMs: durationMs(DEFAULTS.DRIFT_ROTATION_MAX_AGE),
};
