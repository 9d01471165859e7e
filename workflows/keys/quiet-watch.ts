import { CancellationScope, condition, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { WatchKeyUsageInput, WatchKeyUsageResult } from '../../activities/keys/watch-key-usage.js';
import { quietGateWatch } from '../activity-policies.js';
import type { Backoff } from '../waits.js';
import { waitEndsAtMs, watchUntilMs, type GateMemory, type GateTimings } from './quiet-gate.js';
import type { QuietCheckView } from './rotate-tenant-key-messages.js';

/**
 * 1.0 compatibility (issue 49): between two looks of a quiet gate, a run watches the key records with one activity
 * whose retries are the looks (`watchKeys`, activities/keys/watch-key-usage.ts) instead of a timer and a look per
 * poll: a look that sees nothing new adds no event and no workflow task. Runs recorded before it keep their timers.
 *
 * Where it is asked: a rotation and a slot's revoke ask it only before their first wait, so a gate that passes at
 * its first look pays no marker and no TemporalChangeVersion upsert for it. That activation is the one a look's
 * answer started, with no local activity before the question (a patch asked after one can split differently on
 * replay). An adoption, whose gate revokes keys (and records it) in the activation that then waits, asks it as it
 * starts.
 */
export const QUIET_GATE_WATCH_PATCH = 'quiet-gate-watch';

/**
 * When a watch of gates `keys` (judged "wait" at `nowMs`) looks first and until when it looks: first `firstDelayMs`
 * from now (the gate's next poll), or at the moment the verdict can change by time if that is sooner (`verdictMs`,
 * waitEndsAtMs; not brought forward to the allowance's end: watchUntilMs only makes the watch answer at its first
 * look after it); later looks back off as `backoff` does from its count. `previousLookMs`: the run's previous judged
 * look (none yet: each gate's deploy time).
 */
export function watchTimes(
  keys: ReadonlyArray<{ memory: GateMemory; method: QuietCheckView['method'] }>,
  t: GateTimings,
  previousLookMs: number | null,
  nowMs: number,
  firstDelayMs: number,
  backoff: Backoff,
): { times: Pick<WatchKeyUsageInput, 'firstLookMs' | 'untilMs' | 'delays'>; verdictMs: number } {
  const verdictMs = Math.max(nowMs, Math.min(...keys.map((k) => waitEndsAtMs(k.memory, k.method, t))));
  const untilMs = Math.max(
    nowMs,
    Math.min(...keys.map((k) => watchUntilMs(k.memory, k.method, t, previousLookMs ?? k.memory.deployedAtMs))),
  );
  const delays = { baseMs: backoff.baseMs, ceilingMs: backoff.ceilingMs, polls: backoff.polls };
  return { times: { firstLookMs: Math.min(nowMs + firstDelayMs, verdictMs), untilMs, delays }, verdictMs };
}

/**
 * One watch, on the platform queue `queue`, until it answers (what it saw, at which look) or `woken` holds (null:
 * the watch is cancelled, at once when between two looks). It answers at its first look at or after `input.untilMs`
 * (its first look, when that is due later).
 */
export async function watchKeys(
  queue: string,
  input: WatchKeyUsageInput,
  woken: () => boolean = () => false,
): Promise<WatchKeyUsageResult | null> {
  const watchMs = Math.max(input.untilMs, input.firstLookMs) - Date.now();
  const watch = proxyActivities<Activities>(quietGateWatch(queue, watchMs)).watchKeyUsage;
  const scope = new CancellationScope();
  return scope.run(async () => {
    const looked = watch(input);
    const wake = condition(woken).then(() => null);
    // The loser is cancelled with the scope; its rejection is expected and dropped.
    looked.catch(() => undefined);
    wake.catch(() => undefined);
    try {
      return await Promise.race([looked, wake]);
    } finally {
      scope.cancel();
    }
  });
}
