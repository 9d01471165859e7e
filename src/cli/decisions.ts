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

/** What the gateway answers for a decision the run took: its workflow, the decision and the run's answer. */
export type DecisionReply = DecisionAnswer & { workflowId: string; decision: string };

/** What it answers when the server's APPROVAL_POLICY gates the decision: a request for a second operator. */
export interface AwaitingApproval {
  status: 'awaiting_approval';
  approvalId: string;
  expiresAt: string;
  workflowId: string;
}

export function printDecisionReply(reply: DecisionReply, json: boolean | undefined): void {
  const { workflowId, decision, ...answer } = reply;
  printDecision(workflowId, decision, answer, json);
}

export function printAwaitingApproval(answer: AwaitingApproval, json: boolean | undefined): void {
  if (json) printJson(answer);
  else
    printLine(
      `awaiting_approval: ${answer.approvalId} (expires ${answer.expiresAt}); ` +
        `nothing is sent to ${answer.workflowId} until another operator runs \`tenantctl ` +
        `approvals approve ${answer.approvalId} --reason "..."\``,
    );
}
