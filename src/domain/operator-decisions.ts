/**
 * Operator decisions that steer a running workflow (resolveTransfer, parentFunded, revokeAnyway,
 * abortRotation, retryKeyCreate, escalateToEmergency) and the one set of rules that checks them.
 *
 * Why pure functions and no zod: the same checks run as Temporal Update validators inside workflow
 * code (deterministic, small bundle), in the CLI before anything is sent, and in the activities that
 * act on a verdict. A refused decision never reaches history, so it can never move money.
 *
 * Each check returns the trimmed value, or the problems as `field: rule` lines.
 */
import { checkText, type TextRule } from './text-rule.js';
import { INITIAL_TRANSFER, intentPurposeOf } from './onboarding.js';

export const OPERATOR_MAX = 100;
const REASON_MIN = 3;
export const REASON_MAX = 1000;
export const OPERATOR_RULE = `1-${OPERATOR_MAX} characters of A-Z a-z 0-9 . _ @ : - (after trimming)`;
/** A reason: the shared free-text rule (src/domain/text-rule.ts), several lines allowed. */
export const REASON_TEXT: TextRule = { min: REASON_MIN, max: REASON_MAX, multiline: true };
const PURPOSE_TEXT: TextRule = { max: 300 };
const OPERATOR_PATTERN = new RegExp(`^[A-Za-z0-9._@:-]{1,${OPERATOR_MAX}}$`);
const APPROVAL_ID_RULE = 'apr_ and 1-64 characters of A-Z a-z 0-9 _ -';
const APPROVAL_ID_PATTERN = /^apr_[A-Za-z0-9_-]{1,64}$/;

export const TRANSFER_OUTCOMES = ['applied', 'not-applied'] as const;
export type TransferOutcome = (typeof TRANSFER_OUTCOMES)[number];

/** Who decides and why: required on every decision, recorded in history and the audit log. */
export interface DecisionBy {
  operator: string;
  reason: string;
}
/** An operator's verdict on a transfer whose outcome could not be reconciled (after checking the wallet). */
export interface TransferVerdict extends DecisionBy {
  outcome: TransferOutcome;
  /**
   * The four-eyes approval this verdict carries out (src/client/approvals/approvals.ts). Required when the
   * worker's APPROVAL_POLICY gates resolveTransfer: the run checks it before acting (consumeApproval).
   */
  approvalId?: string;
}
/** A close names the transfer by its purpose (a tenant may have more than one). */
export interface CloseTransferVerdict extends TransferVerdict {
  purpose: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: string[] };

function shown(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : value === null ? 'null' : typeof value;
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** A required string field, trimmed; '' (with a problem) when absent or not a string. */
function requiredString(field: string, value: unknown, why: string, problems: string[]): string {
  if (typeof value === 'string') return value.trim();
  problems.push(value === undefined ? `${field}: is required (${why})` : `${field}: must be a string`);
  return '';
}

function checkOperator(value: unknown, problems: string[]): string {
  if (typeof value !== 'string') return requiredString('operator', value, 'who decides; it is audited', problems);
  const trimmed = value.trim();
  if (trimmed === '') problems.push('operator: must not be empty (who decides; it is audited)');
  else if (!OPERATOR_PATTERN.test(trimmed)) problems.push(`operator: must be ${OPERATOR_RULE}`);
  return trimmed;
}

function checkReason(value: unknown, problems: string[]): string {
  if (typeof value !== 'string') return requiredString('reason', value, 'say why; it is audited', problems);
  const checked = checkText(value, REASON_TEXT);
  if (checked.ok) return checked.value;
  problems.push(`reason: ${checked.problem} (say why; it is audited)`);
  return value.trim();
}

/** Checks a plain object with exactly `known` fields; `extra` checks the fields beyond operator and reason. */
function checkDecision<T extends DecisionBy>(
  raw: unknown,
  known: readonly string[],
  extra: (input: Record<string, unknown>, problems: string[]) => Omit<T, keyof DecisionBy>,
): Checked<T> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { ok: false, problems: [`input: must be an object with ${known.join(', ')}`] };
  }
  const input = raw as Record<string, unknown>;
  const problems: string[] = [];
  for (const field of Object.keys(input)) {
    if (!known.includes(field)) problems.push(`${field}: is not a known field (expected ${known.join(', ')})`);
  }
  const operator = checkOperator(input.operator, problems);
  const reason = checkReason(input.reason, problems);
  const rest = extra(input, problems);
  return problems.length ? { ok: false, problems } : { ok: true, value: { ...rest, operator, reason } as T };
}

function checkOutcome(value: unknown, problems: string[]): TransferOutcome {
  if (value === undefined) problems.push(`outcome: is required (${TRANSFER_OUTCOMES.join(' or ')})`);
  // Exactly: "Applied" or "applied " is a typo, and a typo must never count as "not applied".
  else if (!TRANSFER_OUTCOMES.includes(value as TransferOutcome))
    problems.push(`outcome: must be exactly "applied" or "not-applied" (got ${shown(value)})`);
  return value as TransferOutcome;
}

/** parentFunded, revokeAnyway, abortRotation, retryKeyCreate, escalateToEmergency. */
export function checkDecisionBy(raw: unknown): Checked<DecisionBy> {
  return checkDecision<DecisionBy>(raw, ['operator', 'reason'], () => ({}));
}

/** Optional here: whether one is needed is the worker's policy, which consumeApproval applies. */
function checkApprovalId(value: unknown, problems: string[]): { approvalId?: string } {
  if (value === undefined) return {};
  if (typeof value !== 'string' || !APPROVAL_ID_PATTERN.test(value)) {
    problems.push(`approvalId: must be ${APPROVAL_ID_RULE} (got ${shown(value)})`);
    return {};
  }
  return { approvalId: value };
}

/** onboardTenant's and fundTenant's resolveTransfer. */
export function checkTransferVerdict(raw: unknown): Checked<TransferVerdict> {
  return checkDecision<TransferVerdict>(raw, ['outcome', 'operator', 'reason', 'approvalId'], (input, problems) => ({
    outcome: checkOutcome(input.outcome, problems),
    ...checkApprovalId(input.approvalId, problems),
  }));
}

/** closeTenant's resolveTransfer. */
export function checkCloseTransferVerdict(raw: unknown): Checked<CloseTransferVerdict> {
  return checkDecision<CloseTransferVerdict>(
    raw,
    ['purpose', 'outcome', 'operator', 'reason', 'approvalId'],
    (input, problems) => {
      const purpose = requiredString('purpose', input.purpose, `the transfer, e.g. "${INITIAL_TRANSFER}"`, problems);
      const checked = typeof input.purpose === 'string' ? checkText(input.purpose, PURPOSE_TEXT) : undefined;
      if (checked && !checked.ok) problems.push(`purpose: ${checked.problem}`);
      return {
        // The first transfer is `initial` on every surface; its stored intent is `initial-funding`.
        purpose: intentPurposeOf(purpose),
        outcome: checkOutcome(input.outcome, problems),
        ...checkApprovalId(input.approvalId, problems),
      };
    },
  );
}

/** What an accepted decision answers: the run's stage after it, and what happens now or later. */
export interface DecisionAnswer {
  stage: string;
  /** In words: what the decision did, or what it will do and when. */
  effect: string;
  /** resolveTransfer: the transfer's state once the verdict was applied. */
  transferState?: string;
}
