import { prepared, type Queryable } from './pool.js';

/**
 * Takes the next free instant of the shared platform request budget (migration 0017), unless it is more than
 * `maxWaitMs` away: then nothing is taken and the answer is null (the caller looks again shortly, so the queue of
 * taken instants stays short). Otherwise the answer is how long the caller waits before sending (0: now).
 */
export async function takePlatformRequestSlot(
  db: Queryable,
  intervalMs: number,
  maxWaitMs: number,
): Promise<number | null> {
  const { rows } = await db.query<{ waitMs: number }>(
    prepared(
      `WITH now AS (SELECT clock_timestamp() AS at)
     UPDATE platform_request_pacing p
        SET next_at = GREATEST(p.next_at, now.at) + make_interval(secs => $1::float8 / 1000)
       FROM now
      WHERE p.id = 1 AND GREATEST(p.next_at, now.at) <= now.at + make_interval(secs => $2::float8 / 1000)
  RETURNING (EXTRACT(EPOCH FROM (p.next_at - make_interval(secs => $1::float8 / 1000) - now.at)) * 1000)::float8
            AS "waitMs"`,
      [intervalMs, maxWaitMs],
    ),
  );
  const row = rows[0];
  return row === undefined ? null : Math.max(0, row.waitMs);
}
