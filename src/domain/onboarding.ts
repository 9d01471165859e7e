/**
 * Onboarding's fixed names, importable without loading the workflow (the CLI's help text shows
 * the default purpose): the funding transfer's purpose and the first key's slot.
 */
export const ONBOARDING_PURPOSE = 'initial-funding';
export const DEFAULT_SLOT = 'default';
