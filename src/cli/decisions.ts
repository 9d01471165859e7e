import { describeAnswer } from '../client/send-decision.js';
import type { DecisionAnswer } from '../domain/operator-decisions.js';
import { printJson } from './run.js';

/** Prints an accepted operator decision's answer: one line, or JSON. */
export function printDecision(
  workflowId: string,
  name: string,
  answer: DecisionAnswer,
  json: boolean | undefined,
): void {
  if (json) printJson({ workflowId, decision: name, ...answer });
  else console.log(describeAnswer(workflowId, name, answer));
}
