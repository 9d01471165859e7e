import { DURATION_PATTERN, durationRangeProblem, msOf } from './durations.js';
import type { StreamPolicy } from './event-streams.js';

/**
 * The inputs of the event delivery workflows, checked by the workflows themselves before anything else (the worker
 * starts them, but a start in the Web UI or through any Temporal client can hand them anything): `field: rule`
 * problems, for one INVALID_INPUT that fails the run at once. A malformed duration used to throw in workflow code,
 * failing the workflow task for ever. Plain checks, no zod: workflows import this (see event-streams.ts).
 */
const POLICY_FIELDS: ReadonlyArray<keyof StreamPolicy> = ['retryFor', 'initialInterval', 'maximumInterval', 'idleFor'];
const DURATION_RULE = 'must be a duration like 500ms, 30s, 5m, 2h, 1d or whole milliseconds, longer than zero';
const MAX_BATCH = 10_000;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function durationProblem(value: unknown): string | null {
  const formed =
    (typeof value === 'string' && DURATION_PATTERN.test(value)) ||
    (typeof value === 'number' && Number.isInteger(value) && value >= 0);
  if (!formed || msOf(value as string | number) <= 0) return DURATION_RULE;
  return durationRangeProblem(value as string | number);
}

/** A stream policy's timings (each optional). */
export function streamPolicyProblems(policy: unknown): string[] {
  if (policy === undefined) return [];
  if (!isObject(policy)) return ['policy: must be an object'];
  return Object.entries(policy).flatMap(([field, value]) => {
    if (!(POLICY_FIELDS as readonly string[]).includes(field)) return [`policy.${field}: is not a known field`];
    if (value === undefined) return [];
    const problem = durationProblem(value);
    return problem ? [`policy.${field}: ${problem}`] : [];
  });
}

/** deliverEventStream: `{ subscriptionId, stream, policy? }`. */
export function deliverEventStreamInputProblems(input: unknown): string[] {
  if (!isObject(input)) return ['input: must be a JSON object'];
  const problems: string[] = [];
  const { subscriptionId, stream } = input;
  if (typeof subscriptionId !== 'string' || subscriptionId.length === 0 || subscriptionId.length > 200)
    problems.push('subscriptionId: must be a subscription id (1-200 characters)');
  if (typeof stream !== 'string' || stream.length > 200)
    problems.push("stream: must be a tenant's external ref, or '' for the parent's events");
  return [...problems, ...streamPolicyProblems(input['policy'])];
}

/** dispatchEvents: `{ batch?, waitMs?, policy? }` (absent: `{}`). */
export function dispatchEventsInputProblems(input: unknown): string[] {
  if (input === undefined) return [];
  if (!isObject(input)) return ['input: must be a JSON object'];
  const problems: string[] = [];
  const { batch, waitMs } = input;
  if (batch !== undefined && !(Number.isInteger(batch) && (batch as number) >= 1 && (batch as number) <= MAX_BATCH))
    problems.push(`batch: must be a whole number from 1 to ${MAX_BATCH}`);
  if (waitMs !== undefined && !(Number.isInteger(waitMs) && (waitMs as number) >= 0 && (waitMs as number) <= 60_000))
    problems.push('waitMs: must be a whole number of milliseconds from 0 to 60000');
  return [...problems, ...streamPolicyProblems(input['policy'])];
}
