import { describe, expect, it } from 'vitest';
import {
  MAX_REQUESTS_PER_ROTATION_ACTIVITY,
  platformActivitiesPerSecond,
  platformActivitySlots,
} from '../../activities/keys/rotation-options.js';
import { PACED_SHARE } from '../../src/db/request-pacer.js';

/**
 * The platform queue's shape (issue 34): activities start at the whole paced budget (one request each), and a
 * worker's slots hold about two seconds of it, so the requests waiting for the budget at once stay a few seconds.
 */
describe('the platform task queue', () => {
  it('starts activities at the paced budget, one request an activity', () => {
    expect(platformActivitiesPerSecond(20)).toBe(18);
    expect(platformActivitiesPerSecond(100)).toBe(90);
    expect(platformActivitiesPerSecond(0)).toBe(0.1);
  });

  it('sizes a worker’s slots to about two seconds of the budget, 5 to 100', () => {
    expect(platformActivitySlots(20)).toBe(36);
    expect(platformActivitySlots(100)).toBe(100);
    expect(platformActivitySlots(1)).toBe(5);
    expect(platformActivitySlots(0.1)).toBe(5);
  });

  it('keeps what one worker’s slots can wait for within five seconds of the budget from 5/s, and inside half an activity’s 30 s below', () => {
    for (const rate of [1, 2, 5, 10, 20, 50, 100, 200, 1000]) {
      const waitSeconds = (platformActivitySlots(rate) * MAX_REQUESTS_PER_ROTATION_ACTIVITY) / (rate * PACED_SHARE);
      expect(waitSeconds).toBeLessThanOrEqual(rate >= 5 ? 5 : 15);
    }
  });
});
