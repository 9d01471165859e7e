import { describe, expect, it } from 'vitest';
import { coresUsed, floorSeconds, neededCalls, phaseFigures, rssGrowthPercent } from '../../bench/fleet/floor.js';

describe("the fleet bench's floors", () => {
  it('counts the platform calls each phase needs', () => {
    // Five per rotation (create, verify, gate look, the revoke's re-read, revoke).
    expect(neededCalls('rotation', { tenants: 10_000 })).toBe(50_000);
    // With a propagation allowance the gate looks as it opens and again as the allowance ends: six.
    expect(neededCalls('rotation', { tenants: 300, waitSeconds: 20 })).toBe(1_800);
    // Two per tenant (keys, wallet) plus the sub-account listing in pages of 100, rounded up.
    expect(neededCalls('drift', { tenants: 300, subaccounts: 301 })).toBe(604);
    expect(neededCalls('drift', { tenants: 0, subaccounts: 0 })).toBe(1);
    // One wallet read per policy tenant, one transfer per tenant below its floor.
    expect(neededCalls('sweep', { tenants: 2000, below: 1000 })).toBe(3000);
  });

  it("takes a plan rollout's calls from its dry run and refuses a rollout without them", () => {
    // A `ci` slot added to 300 tenants: its create and verification read each (Σ platformCallsOf).
    expect(neededCalls('rollout', { tenants: 300, platformCalls: 600 })).toBe(600);
    expect(neededCalls('rollout', { tenants: 0, platformCalls: 0 })).toBe(0);
    expect(() => neededCalls('rollout', { tenants: 300 })).toThrow("a rollout's floor needs its dry run's calls");
  });

  it('divides the calls by the rate limit and refuses a limit that is not positive', () => {
    expect(floorSeconds(50_000, 100)).toBe(500);
    expect(floorSeconds(1200, 20)).toBe(60);
    expect(() => floorSeconds(10, 0)).toThrow('the rate limit must be positive');
    // A rotation's wait (allowance, quiet period) is counted once: every rotation could wait at once.
    expect(floorSeconds(1500, 100, 30)).toBe(45);
    expect(
      phaseFigures({ seconds: 90, requests: 1500, peakPerSecond: 90, limit: 100, neededCalls: 1500, waitSeconds: 30 }),
    ).toMatchObject({ floorSeconds: 45, ratioToFloor: 2 });
  });

  it("states a phase's duration and request rates against the floor and the limit", () => {
    // One of this machine's runs: 300 rotations at 20/s, 1500 requests in 279.2 s, peak 12/s.
    const figures = phaseFigures({ seconds: 279.2, requests: 1500, peakPerSecond: 12, limit: 20, neededCalls: 1500 });
    expect(figures).toEqual({
      floorSeconds: 75,
      ratioToFloor: 3.72,
      meanPerSecond: 5.4,
      meanOfLimit: 0.27,
      peakOfLimit: 0.6,
      extraRequests: 0,
    });
    // Retried requests count as requests beyond the needed ones.
    expect(phaseFigures({ seconds: 30, requests: 607, peakPerSecond: 22, limit: 20, neededCalls: 603 })).toMatchObject({
      ratioToFloor: 1,
      extraRequests: 4,
      peakOfLimit: 1.1,
    });
  });

  it('states RSS growth between phases and CPU as cores', () => {
    expect(rssGrowthPercent(374, 409.6)).toBe(9.5);
    expect(rssGrowthPercent(400, 380)).toBe(-5);
    expect(rssGrowthPercent(Number.NaN, 380)).toBeNaN();
    expect(coresUsed(32_400, 279.2)).toBe(0.12);
    expect(coresUsed(1000, 0)).toBeNaN();
  });
});
