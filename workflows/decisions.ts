import type { Checked } from '../src/domain/operator-decisions.js';
import { codedFailure, FailureCode } from '../src/domain/failures.js';

/**
 * Operator decisions arrive as Temporal Updates: the validator throws, the caller gets the error
 * (type INVALID_DECISION or DECISION_NOT_APPLICABLE, the message names the field and the rule) and
 * nothing reaches history. Handlers run the same check again for the trimmed value: a validator
 * cannot hand its result to the handler.
 */
export function accepted<T>(checked: Checked<T>): T {
  if (!checked.ok)
    throw codedFailure(FailureCode.INVALID_DECISION, checked.problems.join('; '), { details: checked.problems });
  return checked.value;
}

/** Throws DECISION_NOT_APPLICABLE with `why` unless `applies` (null: it applies). */
export function refuseUnlessApplicable(why: string | null): void {
  if (why !== null) throw codedFailure(FailureCode.DECISION_NOT_APPLICABLE, why);
}
