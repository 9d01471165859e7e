import { InvalidInputError } from './tenant-input.js';

/**
 * The largest single transfer (TRANSFER_MAX_MICRO_USD), so that one caller's oversized amount is
 * refused before anything is written instead of reaching the platform (issue 31): checked at every
 * edge (/v1 transfers and tenants, funding policies, tenantctl) and again by the worker's input
 * validation, so a start sent straight to Temporal is held to it too.
 */
export const TRANSFER_MAX_SETTING = 'TRANSFER_MAX_MICRO_USD';
/** 10,000 USD: well above one tenant's top-up, far below what would drain a parent account at once. */
export const DEFAULT_TRANSFER_MAX_MICRO_USD = '10000000000';

/** `field: must be at most … (TRANSFER_MAX_MICRO_USD)` for an amount above the limit, else null. */
export function transferLimitProblem(
  field: string,
  amountMicroUsd: string | undefined | null,
  maxMicroUsd: string = DEFAULT_TRANSFER_MAX_MICRO_USD,
): string | null {
  // A malformed amount is its schema's problem; only a well-formed one is compared.
  if (!amountMicroUsd || !/^[1-9][0-9]*$/.test(amountMicroUsd)) return null;
  return BigInt(amountMicroUsd) > BigInt(maxMicroUsd)
    ? `${field}: must be at most ${maxMicroUsd} micro-USD (${TRANSFER_MAX_SETTING})`
    : null;
}

/** Every amount above the limit, one `field: rule` line each (empty: all within it). */
export function transferLimitProblems(
  amounts: Record<string, string | undefined | null>,
  maxMicroUsd?: string,
): string[] {
  return Object.entries(amounts)
    .map(([field, amount]) => transferLimitProblem(field, amount, maxMicroUsd))
    .filter((problem): problem is string => problem !== null);
}

/** Throws InvalidInputError (the edges' 400 INVALID_INPUT) naming every amount above the limit. */
export function assertWithinTransferLimit(
  amounts: Record<string, string | undefined | null>,
  maxMicroUsd?: string,
): void {
  const problems = transferLimitProblems(amounts, maxMicroUsd);
  if (problems.length) throw new InvalidInputError(problems);
}
