import type { Metric } from '../lib/types.js';

/**
 * What the throughput target asks of the CPU. With every process on the same cores, throughput times CPU
 * per onboarding cannot exceed the cores' milliseconds per second: so the run's CPU per onboarding sets a
 * ceiling, and the target sets the CPU per onboarding it allows. What that leaves beyond the floor run's CPU
 * (the calls and records, no Temporal) is Temporal's budget, to set beside the bare workflows' CPU per run.
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
  const budget = coreMsPerSecond / input.target;
  return [
    {
      metric: 'cores busy during the onboarding throughput run',
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
      value: round(budget),
      unit: 'ms',
    },
    {
      metric: "  of it beyond the floor run's (the calls and records, no Temporal): left for Temporal",
      value: round(budget - input.floorRunCpuMs),
      unit: 'ms',
    },
  ];
}
