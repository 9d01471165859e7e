import type { FaultRuleInput } from '../src/sim/index.js';

/**
 * The simulator's fault rules for a phase of the run (rules: src/sim/CONTRACT-CHOICES.md). Always
 * on while loading: latency on every call and `drop-after-commit` on every mutating route (the
 * platform acts, the response is lost). Storms come and go on top: 503 before commit, 429 with
 * Retry-After. Storm rules come first, so a stormed request is refused before anything commits.
 */
export const Storm = { none: 'none', unavailable: '503', rateLimited: '429', both: '503+429' } as const;
export type Storm = (typeof Storm)[keyof typeof Storm];

const MUTATING = ['POST', 'PUT', 'DELETE'] as const;

export function faultRules(
  options: { dropProbability: number; stormProbability: number },
  storm: Storm,
): FaultRuleInput[] {
  const rules: FaultRuleInput[] = [
    { method: '*', path: '/**', mode: 'delay', delayMs: 40, probability: 0.3 },
    { method: '*', path: '/**', mode: 'delay', delayMs: 600, probability: 0.03 },
  ];
  if (storm === Storm.unavailable || storm === Storm.both) {
    rules.push({
      method: '*',
      path: '/**',
      mode: 'error-before-commit',
      probability: options.stormProbability,
      retryAfterSeconds: 1,
    });
  }
  if (storm === Storm.rateLimited || storm === Storm.both) {
    rules.push({
      method: '*',
      path: '/**',
      mode: 'rate-limit',
      probability: options.stormProbability,
      retryAfterSeconds: 1,
    });
  }
  for (const method of MUTATING)
    rules.push({ method, path: '/**', mode: 'drop-after-commit', probability: options.dropProbability });
  return rules;
}

export async function setFaults(simUrl: string, rules: FaultRuleInput[]): Promise<void> {
  const response = await fetch(`${simUrl}/__sim/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ rules }),
  });
  if (!response.ok) throw new Error(`setting simulator faults failed: ${response.status} ${await response.text()}`);
}

export async function clearFaults(simUrl: string): Promise<void> {
  const response = await fetch(`${simUrl}/__sim/faults`, { method: 'DELETE' });
  if (!response.ok) throw new Error(`clearing simulator faults failed: ${response.status}`);
}
