import type { Client } from '@temporalio/client';
import { DEFAULTS } from '../../src/config/defaults.js';
import type { PlatformClient } from '../../src/platform/index.js';
import { DRIFT_KINDS, FIX_OF_KIND, type DriftKind, type DriftPolicies } from '../../src/domain/drift-kinds.js';

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

export class DriftPolicyError extends Error {
  override name = 'DriftPolicyError';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** `kind=fix,kind=report`: every problem at once; a fix only for a kind that has one. */
export function parseDriftPolicies(text: string): { policies: DriftPolicies; problems: string[] } {
  const policies: DriftPolicies = {};
  const problems: string[] = [];
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([a-z_]+)=([a-z]+)$/.exec(part);
    if (!match) {
      problems.push(`"${part.slice(0, 60)}" is not kind=report|fix`);
      continue;
    }
    const [, kind, policy] = match as unknown as [string, string, string];
    if (!DRIFT_KINDS.includes(kind as DriftKind))
      problems.push(`unknown drift kind "${kind}" (known: ${DRIFT_KINDS.join(', ')})`);
    else if (policy !== 'report' && policy !== 'fix')
      problems.push(`${kind}: policy must be report or fix (got "${policy.slice(0, 20)}")`);
    else if (policy === 'fix' && !FIX_OF_KIND[kind as DriftKind])
      problems.push(`${kind}: has no safe fix, only report (fixable: ${Object.keys(FIX_OF_KIND).join(', ')})`);
    else if (kind in policies) problems.push(`${kind}: given twice`);
    else policies[kind as DriftKind] = policy;
  }
  return { policies, problems };
}

export function durationMs(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  return (
    Number(match[1]) *
    { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd']
  );
}
