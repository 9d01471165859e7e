/**
 * Onboarding's fixed names, importable without loading the workflow (the CLI's help text shows
 * the default purpose): the funding transfer's purpose and the first key's slot.
 */
export const ONBOARDING_PURPOSE = 'initial-funding';

/**
 * The first transfer's one name on every surface — CLI, HTTP, events, statements, docs: `initial`, the
 * ledger's kind (`initial`, `top-up`, `auto`, `opening`: the words the transfers table's CHECK holds).
 * `initial-funding` (ONBOARDING_PURPOSE) stays the stored intent's purpose only: it is part of the
 * platform idempotency key of every first transfer ever sent, so it cannot change for data already
 * stored. Input that names the transfer takes either word.
 */
export const INITIAL_TRANSFER = 'initial';

/** A stored intent's purpose as the surfaces name it. */
export function transferNameOf(purpose: string): string {
  return purpose === ONBOARDING_PURPOSE ? INITIAL_TRANSFER : purpose;
}

/** A transfer's name as given (either word for the first transfer) to the stored intent's purpose. */
export function intentPurposeOf(name: string): string {
  return name === INITIAL_TRANSFER ? ONBOARDING_PURPOSE : name;
}
export const DEFAULT_SLOT = 'default';
