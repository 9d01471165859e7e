import type { WaitView } from '../../workflows/waits-messages.js';

/**
 * A run's wait as every surface prints it. Apart from current-wait.ts, which asks a run for its wait: printing one
 * loads no Temporal module, so tenantctl's gateway commands print the waits the gateway sends with none loaded.
 */

/** One line for a wait: what it waits for, since when, and the decisions that apply. */
export function formatWait(wait: WaitView): string {
  const decide = wait.decisions.length > 0 ? `; decisions: ${wait.decisions.join(', ')}` : '';
  const next = wait.nextCheckAt ? `; next look ${wait.nextCheckAt}` : '';
  return `waiting (${wait.stage}) since ${wait.since}: ${wait.waitingFor}${next}${decide}`;
}
