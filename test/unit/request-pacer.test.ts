import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/pool.js';
import { createRequestPacer, LATE_MS, type PacerClock } from '../../src/db/request-pacer.js';

/**
 * The pacer's own rule (the shared budget itself is test/integration/request-pacing.test.ts): a request that
 * wakes more than LATE_MS after its instant takes another instead of going out with the others held up with it.
 */
function world(answers: Array<number | null>, lateBy: number[]) {
  let nowMs = 0;
  const taken: number[] = [];
  const db = {
    query: async () => {
      const waitMs = answers.shift();
      if (waitMs === undefined) throw new Error('more slots taken than the test expects');
      taken.push(nowMs);
      return { rows: waitMs === null ? [] : [{ waitMs }] };
    },
  } as unknown as Queryable;
  const clock: PacerClock = {
    now: () => nowMs,
    sleep: async (ms) => {
      nowMs += ms + (lateBy.shift() ?? 0);
    },
  };
  return { pace: createRequestPacer(db, 100, clock), taken, now: () => nowMs };
}

describe('the request pacer', () => {
  it('sends at its instant when it wakes on time', async () => {
    const w = world([40], [LATE_MS]);
    await w.pace();
    expect(w.taken).toHaveLength(1);
    expect(w.now()).toBe(40 + LATE_MS);
  });

  it('takes another instant when it wakes late (held up), and sends on that one', async () => {
    const w = world([40, 10], [LATE_MS + 1, 0]);
    await w.pace();
    expect(w.taken).toEqual([0, 40 + LATE_MS + 1]);
  });

  it('goes anyway after three late wakes, so a process held up all the time still sends', async () => {
    const w = world([5, 5, 5, 5], [500, 500, 500, 500]);
    await w.pace();
    expect(w.taken).toHaveLength(4);
  });

  it('looks again without taking one while the budget is further ahead than it may wait', async () => {
    const w = world([null, 0], []);
    await w.pace();
    expect(w.taken).toEqual([0, 250]);
  });
});
