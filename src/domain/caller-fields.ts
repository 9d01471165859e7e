/**
 * Fields of a workflow input that no caller sets: what a run hands to its next run when it continues as new (its
 * cursor, its totals, its state), and closeTenant's `closeSooner`, which only the server's starter writes. A
 * caller that sets one skips the run's own checks: a fleet sweep told `after: "zzz"` skips every tenant before
 * "zzz", `totals` start from a forged count. The starters refuse them (parseCallerInput) and the workflow's own
 * input check refuses them in a first run (activities/input-validation.ts): one list, one rule. Pure: workflows
 * may import it.
 */

/** The carried fields of each workflow input (by its schema's name there); every other input: `continued`. */
const CARRIED: Readonly<Record<string, readonly string[]>> = {
  rotateFleet: ['after', 'totals'],
  autoTopUpSweep: ['after', 'totals'],
  rolloutPlan: ['after', 'continued'],
};
const DEFAULT_CARRIED = ['continued'] as const;

export const CARRIED_RULE = 'set only by a run that continues as new, never by a caller';
export const CLOSE_SOONER_RULE =
  "set by the server's starter for an admin's close sooner than the minimum, never by a caller";

/** The fields of a workflow input that only its own continuation sets. */
export function carriedFieldsOf(schema: string): readonly string[] {
  return CARRIED[schema] ?? DEFAULT_CARRIED;
}

/** A field counts as set when it holds a value (null is the cursor's own default: the start). */
function isSet(input: unknown, field: string): boolean {
  if (typeof input !== 'object' || input === null) return false;
  const value = (input as Record<string, unknown>)[field];
  return value !== undefined && value !== null;
}

/** `field: rule` for each of `fields` the input sets. */
export function carriedFieldProblems(fields: readonly string[], input: unknown): string[] {
  return fields.filter((field) => isSet(input, field)).map((field) => `${field}: ${CARRIED_RULE}`);
}
