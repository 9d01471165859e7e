import { defineQuery } from '@temporalio/workflow';

/** A run's current wait, as every surface shows it (see workflows/waits.ts for the rule). */
export interface WaitView {
  /** The run's stage while it waits (e.g. `key_limit`, `waiting_for_quiet`, `held`). */
  stage: string;
  /** What it waits for, in one sentence, with what ends the wait. */
  waitingFor: string;
  /** When this wait began (ISO, the workflow's clock); kept across continue-as-new. */
  since: string;
  /** The operator decisions (Update names) that apply now; empty when none does. */
  decisions: string[];
  /** When the run looks again by itself (a poll or a timer); null when only a decision or an event ends it. */
  nextCheckAt: string | null;
}

/** Every workflow that can wait answers this query: its current wait, or null while it is not waiting. */
export const currentWaitQuery = defineQuery<WaitView | null>('currentWait');
