import type { Metric } from '../lib/types.js';

/**
 * What the throughput target asks of the CPU. With every process of the bench's stack on the same cores (its
 * own dev server, embedded Postgres and simulator), throughput times CPU per onboarding cannot exceed the
 * cores' milliseconds per second. So the run's CPU per onboarding sets a ceiling (an upper bound, reached only
 * with the cores to the bench alone), and the target sets the CPU per onboarding it allows. What that leaves
 * beyond the floor run's CPU (the calls and records, no Temporal; measured sequentially, so a rough figure) is
 * for Temporal and the rest of the workflow, to set beside the bare workflows' CPU per run.
 */
export interface ThroughputCeilingInput {
  cores: number;
  target: number;
  onboarding: { perSecond: number; cpuMsPerRun: number };
  floorRunCpuMs: number;
}

export function throughputCeilingMetrics(input: ThroughputCeilingInput): Metric[] {
  const coreMsPerSecond = input.cores * 1000;
  const round = (value: number) => Math.round(value * 10) / 10;
  const ceiling = coreMsPerSecond / input.onboarding.cpuMsPerRun;
  const allowed = coreMsPerSecond / input.target;
  return [
    {
      metric: `CPU use during the onboarding throughput run (% of ${input.cores} cores)`,
      value: Math.round((input.onboarding.perSecond * input.onboarding.cpuMsPerRun * 100) / coreMsPerSecond),
      unit: '%',
    },
    {
      metric: `throughput ceiling: ${input.cores} cores fully busy at this CPU per onboarding`,
      value: round(ceiling),
      unit: '/s',
      target: { description: `reaches the throughput target (${round(input.target)}/s)`, met: ceiling >= input.target },
    },
    {
      metric: `CPU per onboarding the throughput target allows (${input.cores} cores fully busy)`,
      value: round(allowed),
      unit: 'ms',
    },
    {
      metric:
        "that allowance minus the floor run's CPU (calls and records, no Temporal; negative: the floor exceeds it)",
      value: round(allowed - input.floorRunCpuMs),
      unit: 'ms',
    },
  ];
}
