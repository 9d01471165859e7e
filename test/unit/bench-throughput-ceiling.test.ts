import { describe, expect, it } from 'vitest';
import { throughputCeilingMetrics } from '../../bench/onboarding/throughput-ceiling.js';

const valueOf = (metrics: ReturnType<typeof throughputCeilingMetrics>, start: string) =>
  metrics.find((m) => m.metric.startsWith(start));

describe("the onboarding bench's throughput ceiling rows", () => {
  it('derives the ceiling, the allowance and what the floor leaves of it from CPU per onboarding', () => {
    // One of this machine's runs: 24.6/s at 67.8 ms of CPU each on 2 cores, target 44.7/s, floor run 40.1 ms.
    const metrics = throughputCeilingMetrics({
      cores: 2,
      target: 44.7,
      onboarding: { perSecond: 24.6, cpuMsPerRun: 67.8 },
      floorRunCpuMs: 40.1,
    });
    expect(valueOf(metrics, 'CPU use during')).toMatchObject({ value: 83, unit: '%' });
    expect(valueOf(metrics, 'throughput ceiling')).toMatchObject({ value: 29.5, unit: '/s', target: { met: false } });
    expect(valueOf(metrics, 'CPU per onboarding the throughput target allows')).toMatchObject({ value: 44.7 });
    expect(valueOf(metrics, 'that allowance minus')).toMatchObject({ value: 4.6, unit: 'ms' });
  });

  it('says when the floor alone needs more CPU than the target allows, and when the ceiling reaches it', () => {
    const tight = throughputCeilingMetrics({
      cores: 2,
      target: 64.9,
      onboarding: { perSecond: 31.9, cpuMsPerRun: 48 },
      floorRunCpuMs: 33.9,
    });
    expect(valueOf(tight, 'that allowance minus')?.value).toBe(-3.1);
    const easy = throughputCeilingMetrics({
      cores: 4,
      target: 50,
      onboarding: { perSecond: 40, cpuMsPerRun: 50 },
      floorRunCpuMs: 30,
    });
    expect(valueOf(easy, 'throughput ceiling')).toMatchObject({ value: 80, target: { met: true } });
    expect(valueOf(easy, 'CPU use during')?.value).toBe(50);
  });
});
