/**
 * The fleet benchmark's arithmetic (pure, unit-tested in test/unit/bench-fleet-floor.test.ts): the
 * platform calls each phase needs, its floor (those calls at the rate limit), and how a measured
 * phase compares with the floor and the limit.
 */

/**
 * Platform requests each unit of a phase needs when nothing goes wrong (counted on the simulator):
 * a rotation creates the key, verifies it with the new key, looks once at the quiet gate (the key
 * list), and revokes the old key after re-reading it (two); with a propagation allowance the gate looks
 * twice, as it opens (the new key's first use there fixes deploy time on the platform's clock, which later
 * judges a late use) and as the allowance ends, so one call more (GATE_LOOKS_AFTER_ALLOWANCE); a drift check observes each tenant's keys
 * and wallet and lists the sub-accounts in pages of DRIFT_LIST_PAGE; a sweep reads each policy
 * tenant's wallet once and a top-up sends one transfer; a plan rollout needs what its dry run says
 * (Σ platformCallsOf over the tenants it moves, src/domain/plan-rollout.ts), given as `platformCalls`.
 */
export const CALLS_PER_ROTATION = 5;
export const GATE_LOOKS_AFTER_ALLOWANCE = 1;
export const CALLS_PER_DRIFT_TENANT = 2;
export const DRIFT_LIST_PAGE = 100;
export const CALLS_PER_WALLET_READ = 1;
export const CALLS_PER_TOP_UP = 1;

export type FleetPhase = 'rotation' | 'drift' | 'sweep' | 'rollout';

export interface PhaseCounts {
  /** Tenants the phase works on (the whole fleet; for the sweep, those with a policy). */
  tenants: number;
  /** Sweep only: policy tenants below their floor (each gets one top-up). */
  below?: number;
  /** Drift only: sub-accounts the parent has on the platform (listed in pages). */
  subaccounts?: number;
  /** Rotation only: the wait each rotation makes whatever the rate (its propagation allowance), seconds. */
  waitSeconds?: number;
  /** Rollout only: the platform calls its dry run counts (Σ platformCallsOf). */
  platformCalls?: number;
}

export function neededCalls(phase: FleetPhase, counts: PhaseCounts): number {
  switch (phase) {
    case 'rotation':
      return counts.tenants * (CALLS_PER_ROTATION + (counts.waitSeconds ? GATE_LOOKS_AFTER_ALLOWANCE : 0));
    case 'drift':
      return (
        Math.max(1, Math.ceil((counts.subaccounts ?? counts.tenants) / DRIFT_LIST_PAGE)) +
        counts.tenants * CALLS_PER_DRIFT_TENANT
      );
    case 'sweep':
      return counts.tenants * CALLS_PER_WALLET_READ + (counts.below ?? 0) * CALLS_PER_TOP_UP;
    case 'rollout':
      if (counts.platformCalls === undefined) throw new RangeError("a rollout's floor needs its dry run's calls");
      return counts.platformCalls;
  }
}

/**
 * The least time the calls can take at the limit, seconds, plus the least time one unit must wait
 * whatever the rate (a rotation's propagation allowance and quiet period: every rotation could start
 * at once, so the wait is counted once, not per rotation).
 */
export function floorSeconds(calls: number, limitPerSecond: number, waitSeconds = 0): number {
  if (!(limitPerSecond > 0)) throw new RangeError('the rate limit must be positive');
  return calls / limitPerSecond + waitSeconds;
}

export interface PhaseMeasure {
  seconds: number;
  /** Requests the simulator counted during the phase (429s included). */
  requests: number;
  peakPerSecond: number;
  limit: number;
  neededCalls: number;
  /** The least time one unit waits whatever the rate (floorSeconds). */
  waitSeconds?: number;
}

export interface PhaseFigures {
  floorSeconds: number;
  /** Duration ÷ floor: 1.0 is the platform's limit fully used by needed calls. */
  ratioToFloor: number;
  meanPerSecond: number;
  /** Mean and peak request rate as a share of the limit (1.0: at the limit). */
  meanOfLimit: number;
  peakOfLimit: number;
  /** Requests beyond the needed ones (retries, 429s, extra reads), per tenant-unit of needed calls. */
  extraRequests: number;
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

export function phaseFigures(m: PhaseMeasure): PhaseFigures {
  const floor = floorSeconds(m.neededCalls, m.limit, m.waitSeconds);
  const mean = m.seconds > 0 ? m.requests / m.seconds : 0;
  return {
    floorSeconds: round(floor, 1),
    ratioToFloor: floor > 0 ? round(m.seconds / floor, 2) : Number.NaN,
    meanPerSecond: round(mean, 1),
    meanOfLimit: round(mean / m.limit, 2),
    peakOfLimit: round(m.peakPerSecond / m.limit, 2),
    extraRequests: m.requests - m.neededCalls,
  };
}

/** RSS growth from the end of the first phase to the end of the last, percent (target ≤ 10). */
export function rssGrowthPercent(firstEndMb: number, lastEndMb: number): number {
  if (!(firstEndMb > 0)) return Number.NaN;
  return round(((lastEndMb - firstEndMb) / firstEndMb) * 100, 1);
}

/** CPU seconds over a phase as a share of one core (1.0: one core busy the whole phase). */
export function coresUsed(cpuMs: number, seconds: number): number {
  return seconds > 0 ? round(cpuMs / 1000 / seconds, 2) : Number.NaN;
}
