import { z } from 'zod';
import type { Client } from '@temporalio/client';
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
  quietPeriodMs: 3_600_000,
  rotationMaxAgeMs: 90 * 86_400_000,
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

const emptyToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);
const durationText = (fallback: string) =>
  z.preprocess(
    emptyToUndefined,
    z
      .string()
      .regex(/^\d+(s|m|h|d)$/, 'must be a duration like 30m, 12h or 90d')
      .default(fallback),
  );

/** The fields added to config.ts's configSchema (one spread line there). */
export const driftConfigShape = {
  DRIFT_POLICY: z
    .preprocess(
      emptyToUndefined,
      z
        .string()
        .superRefine((value, ctx) => {
          for (const problem of parseDriftPolicies(value).problems) ctx.addIssue({ code: 'custom', message: problem });
        })
        .default(''),
    )
    .describe(
      `Drift fixes, comma-separated kind=report|fix (default: report everything). ` +
        `Fixable: ${Object.keys(FIX_OF_KIND).join(', ')}.`,
    ),
  DRIFT_QUIET_PERIOD: durationText('24h').describe(
    'An orphan key of ours is revoked by the drift fix only after no use for this long.',
  ),
  DRIFT_ROTATION_MAX_AGE: durationText('90d').describe(
    'An active key older than this with no rotation schedule is reported (key_rotation_overdue).',
  ),
  DRIFT_SCHEDULE_EVERY: durationText('1h').describe(
    'How often `tenantctl drift schedule create` runs the fleet check by default.',
  ),
};
export const driftConfigSchema = z.object(driftConfigShape);
export type DriftConfig = z.infer<typeof driftConfigSchema>;

export function durationMs(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  if (!match) throw new Error(`not a duration: ${text}`);
  return (
    Number(match[1]) *
    { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 'ms' | 's' | 'm' | 'h' | 'd']
  );
}

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
