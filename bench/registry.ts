import type { Benchmark } from './lib/types.js';
import { driftBenchmark } from './drift.js';
import { onboardingBenchmark } from './onboarding.js';
import { recoveryBenchmark } from './recovery.js';
import { rotationBenchmark } from './rotation.js';
import { webhooksBenchmark } from './webhooks.js';
import { topUpsBenchmark } from './topups.js';
import { eventsBenchmark } from './events.js';
import { fleetBenchmark } from './fleet.js';
import { plansBenchmark } from './plans.js';
import { cliBenchmark } from './cli.js';

/**
 * Every benchmark `npm run bench` knows, in the order a bare `npm run bench` runs them. To add one,
 * write `bench/<name>.ts` exporting a `Benchmark` (see bench/lib/types.ts) and add ONE line here.
 */
export const benchmarks: readonly Benchmark[] = [
  onboardingBenchmark,
  rotationBenchmark,
  webhooksBenchmark,
  driftBenchmark,
  recoveryBenchmark,
  topUpsBenchmark,
  eventsBenchmark,
  fleetBenchmark,
  plansBenchmark,
  cliBenchmark,
];
