import { DRIFT_KINDS, FIX_OF_KIND, type DriftKind, type DriftPolicies } from './drift-kinds.js';

/** `DRIFT_POLICY` (which drift kinds are fixed, which only reported) and the drift durations, parsed. */
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
