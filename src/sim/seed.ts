import { readFile } from 'node:fs/promises';
import { z } from 'zod';

const nonNegativeIntegerString = z
  .string({ error: 'must be a string of a non-negative integer (micro-USD)' })
  .regex(/^(0|[1-9][0-9]*)$/, 'must be a string of a non-negative integer (micro-USD)');

const parentSchema = z
  .object({
    id: z.string().min(1, 'must be a non-empty string'),
    paidBalanceMicroUsd: nonNegativeIntegerString,
    promoBalanceMicroUsd: nonNegativeIntegerString,
    platformKeys: z.array(z.string().regex(/^svpk_\S{8,}$/, 'must start with svpk_ and have 8+ more characters')),
    personalTokens: z.array(z.string().regex(/^sv_\S{8,}$/, 'must start with sv_ and have 8+ more characters')),
    activeKeyLimit: z.number().int().positive(),
  })
  .strict();

/** The seed file, validated strictly: unknown fields are typos in our own fixtures, so they are rejected. */
export const simSeedSchema = z
  .object({
    parents: z.array(parentSchema).min(1, 'needs at least one parent'),
    tenantActiveKeyLimit: z.number().int().positive().default(3),
    idempotencyRetentionSeconds: z.number().int().positive().default(86_400),
    deliveryHistoryLimit: z.number().int().positive().default(20),
  })
  .strict()
  .superRefine((seed, ctx) => {
    const ids = new Set<string>();
    const tokens = new Set<string>();
    seed.parents.forEach((parent, i) => {
      if (ids.has(parent.id))
        ctx.addIssue({ code: 'custom', path: ['parents', i, 'id'], message: 'duplicate parent id' });
      ids.add(parent.id);
      for (const token of [...parent.platformKeys, ...parent.personalTokens]) {
        if (tokens.has(token)) ctx.addIssue({ code: 'custom', path: ['parents', i], message: 'token used twice' });
        tokens.add(token);
      }
    });
  });

export type SimSeed = z.output<typeof simSeedSchema>;
export type SimSeedInput = z.input<typeof simSeedSchema>;

export class SimSeedError extends Error {
  override name = 'SimSeedError';
}

/** Validates a seed and names every bad field, e.g. `parents[0].paidBalanceMicroUsd: must be ...`. */
export function parseSeed(input: unknown): SimSeed {
  const result = simSeedSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
  throw new SimSeedError(`Invalid simulator seed:\n  ${problems.join('\n  ')}`);
}

export async function loadSeedFile(path: string): Promise<SimSeed> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new SimSeedError(`Cannot read seed file ${path}: ${(cause as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new SimSeedError(`Seed file ${path} is not valid JSON: ${(cause as Error).message}`);
  }
  return parseSeed(json);
}

export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
    .join('');
}

// Clearly fake fixture tokens: never real-looking secrets in the repository.
export const DEFAULT_PARENT_ID = 'parent_sim_0001';
export const DEFAULT_PLATFORM_KEY = 'svpk_sim_DO_NOT_USE_parent_0001';
export const DEFAULT_PERSONAL_TOKEN = 'sv_sim_DO_NOT_USE_personal_0001';
export const DEFAULT_PAID_BALANCE_MICRO_USD = '1000000000';
export const DEFAULT_PROMO_BALANCE_MICRO_USD = '50000000';

export const DEFAULT_SEED: SimSeed = {
  parents: [
    {
      id: DEFAULT_PARENT_ID,
      paidBalanceMicroUsd: DEFAULT_PAID_BALANCE_MICRO_USD,
      promoBalanceMicroUsd: DEFAULT_PROMO_BALANCE_MICRO_USD,
      platformKeys: [DEFAULT_PLATFORM_KEY],
      personalTokens: [DEFAULT_PERSONAL_TOKEN],
      activeKeyLimit: 5,
    },
  ],
  tenantActiveKeyLimit: 3,
  idempotencyRetentionSeconds: 86_400,
  deliveryHistoryLimit: 20,
};
