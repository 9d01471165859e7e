import type { UpdateDefinition } from '@temporalio/common';
import { setHandler } from '@temporalio/workflow';
import {
  checkDecisionBy,
  type Checked,
  type DecisionAnswer,
  type DecisionBy,
} from '../src/domain/operator-decisions.js';
import { accepted, refuseUnlessApplicable } from './decisions.js';

/**
 * One way every workflow takes operator decisions (keys, plans, close, top-ups): a table from each decision
 * (an Update) to the stages at which it applies, and one installer. A decision's validator refuses a malformed value
 * (INVALID_DECISION) and one that does not apply now (DECISION_NOT_APPLICABLE, with the workflow's own
 * reason) before it reaches history; the handler takes the accepted one. The wait lists the decisions
 * the validators would accept now: the same rule, by construction.
 */
export type DecisionTable<Stage extends string, Name extends string> = { readonly [N in Name]: readonly Stage[] };

export interface Decisions<Stage extends string, Name extends string> {
  table: DecisionTable<Stage, Name>;
  updates: { readonly [N in Name]: UpdateDefinition<DecisionAnswer, [DecisionBy]> };
  stage(): Stage;
  /** Why the decision cannot apply whatever the stage (one was already accepted); null: the table decides. */
  settled?(name: Name): string | null;
  /** The refusal when the stage is not in the decision's row. */
  notAt(name: Name, stages: readonly Stage[]): string;
  /** A further condition once the stage fits (the old key's id unknown, an emergency); null: it applies. */
  also?(name: Name): string | null;
  /** Takes an accepted decision; returns its effect, in words. */
  take(name: Name, by: DecisionBy): string;
  /** Whether an applicable decision is listed in the wait (one that would change nothing is not); default yes. */
  listed?(name: Name): boolean;
}

/** The name the key workflows knew it by (the table lived in workflows/keys/ first). */
export type KeyDecisions<Stage extends string, Name extends string> = Decisions<Stage, Name>;

/** Why `name` does not apply now, or null. */
export function refusalOf<Stage extends string, Name extends string>(
  d: Decisions<Stage, Name>,
  name: Name,
): string | null {
  const settled = d.settled?.(name) ?? null;
  if (settled !== null) return settled;
  const row = d.table[name];
  if (!row.includes(d.stage())) return d.notAt(name, row);
  return d.also?.(name) ?? null;
}

/**
 * One decision whose value is more than who and why (a verdict on a transfer), or whose answer waits until the
 * run applied it: its own check, its refusal given the accepted value, and its take. The table's rows are
 * installed through it, so a validator refuses the same way whichever kind the decision is.
 */
export interface Decision<Value> {
  update: UpdateDefinition<DecisionAnswer, [Value]>;
  check(raw: unknown): Checked<Value>;
  /** Why the accepted value does not apply now, or null. */
  refusal(value: Value): string | null;
  take(value: Value): DecisionAnswer | Promise<DecisionAnswer>;
}

/** Installs one decision's Update: the validator refuses before history, the handler takes the accepted value. */
export function installDecision<Value>(d: Decision<Value>): void {
  setHandler(d.update, (raw: Value) => d.take(accepted(d.check(raw))), {
    validator: (raw: Value) => refuseUnlessApplicable(d.refusal(accepted(d.check(raw)))),
  });
}

/** Installs the Updates of `d`; returns the decisions that apply now (what a wait lists), in table order. */
export function installDecisions<Stage extends string, Name extends string>(d: Decisions<Stage, Name>): () => Name[] {
  const names = Object.keys(d.table) as Name[];
  for (const name of names) {
    installDecision<DecisionBy>({
      update: d.updates[name],
      check: checkDecisionBy,
      refusal: () => refusalOf(d, name),
      take: (by) => {
        const effect = d.take(name, by);
        return { stage: d.stage(), effect };
      },
    });
  }
  return () => names.filter((name) => refusalOf(d, name) === null && (d.listed?.(name) ?? true));
}
