import { z } from 'zod';

export const FaultMode = {
  Delay: 'delay',
  ErrorBeforeCommit: 'error-before-commit',
  DropAfterCommit: 'drop-after-commit',
  RateLimit: 'rate-limit',
} as const;
export type FaultMode = (typeof FaultMode)[keyof typeof FaultMode];

/** One rule of `POST /__sim/faults`. Unknown fields are rejected: a typo in a test's fault should fail loudly. */
export const faultRuleSchema = z
  .object({
    method: z.string().min(1).default('*'),
    path: z.string().min(1),
    mode: z.enum([FaultMode.Delay, FaultMode.ErrorBeforeCommit, FaultMode.DropAfterCommit, FaultMode.RateLimit]),
    status: z.number().int().min(400).max(599).optional(),
    code: z.string().min(1).optional(),
    message: z.string().optional(),
    probability: z.number().min(0).max(1).default(1),
    count: z.number().int().positive().nullable().optional(),
    delayMs: z.number().int().min(0).max(600_000).default(0),
    retryAfterSeconds: z.number().int().min(0).default(1),
  })
  .strict();

export const faultRulesSchema = z.object({ rules: z.array(faultRuleSchema) }).strict();

export type FaultRuleInput = z.input<typeof faultRuleSchema>;
type FaultRule = z.output<typeof faultRuleSchema> & { remaining: number; matcher: RegExp };

/** What the faults decided for one request. */
export interface FaultPlan {
  delayMs: number;
  /** The one non-delay rule that applies, if any (the first matching one). */
  terminal: {
    mode: Exclude<FaultMode, 'delay'>;
    status: number;
    code: string;
    message: string;
    retryAfterSeconds: number;
  } | null;
}

/**
 * Fault rules by method and path pattern (relative to /api/v1; `*` is exactly one segment, `**` any number).
 * Every matching delay rule adds its delay; the first matching other rule decides the outcome. `count` is
 * consumed only when a rule actually applies (after its probability roll).
 */
export class FaultInjector {
  #rules: FaultRule[] = [];

  constructor(private readonly random: () => number) {}

  setRules(rules: z.output<typeof faultRuleSchema>[]): void {
    this.#rules = rules.map((rule) => ({
      ...rule,
      remaining: rule.count ?? Number.POSITIVE_INFINITY,
      matcher: compilePattern(rule.path),
    }));
  }

  clear(): void {
    this.#rules = [];
  }

  plan(method: string, apiPath: string): FaultPlan {
    const plan: FaultPlan = { delayMs: 0, terminal: null };
    for (const rule of this.#rules) {
      if (rule.remaining <= 0) continue;
      if (rule.method !== '*' && rule.method.toUpperCase() !== method.toUpperCase()) continue;
      if (!rule.matcher.test(apiPath)) continue;
      if (rule.mode !== 'delay' && plan.terminal) continue;
      if (this.random() >= rule.probability) continue;
      rule.remaining -= 1;
      plan.delayMs += rule.delayMs;
      if (rule.mode !== 'delay') plan.terminal = terminalOf(rule);
    }
    return plan;
  }
}

function terminalOf(rule: FaultRule): NonNullable<FaultPlan['terminal']> {
  const mode = rule.mode as Exclude<FaultMode, 'delay'>;
  const rateLimit = mode === 'rate-limit';
  return {
    mode,
    status: rule.status ?? (rateLimit ? 429 : 503),
    code: rule.code ?? (rateLimit ? 'RATE_LIMITED' : 'SERVICE_UNAVAILABLE'),
    message: rule.message ?? (rateLimit ? 'Too many requests.' : 'Injected fault: the service is unavailable.'),
    retryAfterSeconds: rule.retryAfterSeconds,
  };
}

export function compilePattern(pattern: string): RegExp {
  const path = (pattern.startsWith('/') ? pattern : `/${pattern}`).replace(/\/+$/, '') || '/';
  const source = path
    .split('/')
    .map((segment) => {
      if (segment === '**') return '.*';
      if (segment === '*') return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/** Mulberry32: a tiny seedable PRNG, so fault probabilities can be made reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
