import type { DecisionAnswer } from '../domain/operator-decisions.js';
import { printJson, printLine } from './output.js';

/** One line for the operator: what the decision did or will do. */
function describeAnswer(workflowId: string, name: string, answer: DecisionAnswer): string {
  return (
    `${name} accepted by ${workflowId} (now ` +
    `${answer.stage}${answer.transferState ? `, transfer ${answer.transferState}` : ''}): ` +
    `${answer.effect}`
  );
}

/** Prints an accepted operator decision's answer: one line, or JSON. */
export function printDecision(
  workflowId: string,
  name: string,
  answer: DecisionAnswer,
  json: boolean | undefined,
): void {
  if (json) printJson({ workflowId, decision: name, ...answer });
  else printLine(describeAnswer(workflowId, name, answer));
}
