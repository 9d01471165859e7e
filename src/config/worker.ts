import { DEFAULTS } from './defaults.js';
import { area, hostPort, setting, wholeNumber } from './helpers.js';

export const workerSettings = area('worker', {
  WORKER_MAX_CACHED_WORKFLOWS: setting(wholeNumber(2, 100_000), {
    description:
      "Workflows kept in the worker's sticky cache (none above 200 MB of heap by the SDK's rule: set this when " +
      'capping the heap with `NODE_OPTIONS`; see [Worker memory](operations.md#worker-memory)).',
    advanced: true,
    unset: "the SDK's, derived from the V8 heap limit",
  }),
  WORKER_HEAP_GROWING_PERCENT: setting(wholeNumber(0, 400, DEFAULTS.WORKER_HEAP_GROWING_PERCENT), {
    description:
      "How far (percent) the worker's V8 heaps may grow past what the last collection kept; lower holds RSS " +
      "down at some GC cost, `0` leaves V8's own heuristics (see [Worker memory](operations.md#worker-memory)).",
    advanced: true,
  }),
  WORKER_METRICS_ADDRESS: setting(hostPort(), {
    description:
      "`host:port` of the worker's Prometheus exporter (e.g. `0.0.0.0:9464`): SDK metrics and " +
      '`tpo_outcomes` / `tpo_duration_seconds`.',
    unset: 'off',
  }),
});
