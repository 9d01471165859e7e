import type { DriftOptions } from '../../../activities/drift/options.js';
import type { DriftConfig } from '../../config/drift.js';
import { DriftPolicyError, durationMs, parseDriftPolicies } from '../../domain/drift-policy.js';

/** The drift activities' options from the configuration (the worker's wiring). */
export function buildDriftOptions(
  config: DriftConfig,
  extra: Pick<DriftOptions, 'temporal' | 'listPlatform'> = {},
): DriftOptions {
  const { policies, problems } = parseDriftPolicies(config.DRIFT_POLICY);
  if (problems.length) throw new DriftPolicyError(problems.map((p) => `DRIFT_POLICY: ${p}`));
  return {
    policies,
    quietPeriodMs: durationMs(config.DRIFT_QUIET_PERIOD),
    rotationMaxAgeMs: durationMs(config.DRIFT_ROTATION_MAX_AGE),
    ...extra,
  };
}
