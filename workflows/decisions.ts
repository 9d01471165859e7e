import { ApplicationFailure, log, patched } from '@temporalio/workflow';
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

// Changed behaviour on an existing code path (signals used to be taken as they came): a history
// recorded before it replays the old way, every new signal is checked.
const SIGNAL_CHECK_PATCH = 'operator-signals-validated';

/**
 * The old signal names are still handled (a run may already hold one in its history), checked by
 * the same rules as the Update: a signal that fails them is a logged no-op. Signals cannot answer,
 * so the log line tells the operator to use the Update, which does.
 */
export function signalAccepted<T>(
  name: string,
  checked: Checked<T>,
  notApplicable: string | null,
  raw: T,
): { value: T } | null {
  const problems = checked.ok ? (notApplicable ? [notApplicable] : []) : checked.problems;
  if (checked.ok && problems.length === 0) return { value: checked.value };
  if (!patched(SIGNAL_CHECK_PATCH)) return { value: raw };
  log.warn(
    `ignored a ${name} signal: ${problems.join('; ')}. Send it as an Update ` +
      `(tenantctl, or temporal workflow update execute --name ${name}) to see the ` +
      `answer`,
    { signal: name },
  );
  return null;
}

/**
 * A signal whose verdict a later check refused (the approval gate): signals cannot answer, so the
 * refusal is a logged warning with its type, and the run goes on waiting.
 */
export function signalRefused(name: string): (error: unknown) => void {
  return (error) => {
    const type = error instanceof ApplicationFailure ? error.type : undefined;
    log.warn(
      `ignored a ${name} signal: ${(error as Error).message}. Send it as an Update with its approvalId ` +
        `(tenantctl approvals approve) to see the answer`,
      { signal: name, refusal: type ?? 'UNKNOWN' },
    );
  };
}
