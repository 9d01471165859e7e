import type { Queryable } from './pool.js';

/** Final statements of closed tenants (migration 0011). The statement holds no secret. */
export async function upsertCloseStatement(
  db: Queryable,
  input: { runKey: string; externalRef: string; statement: Record<string, unknown> },
): Promise<void> {
  await db.query(
    `INSERT INTO close_statements (run_key, external_ref, statement) VALUES ($1::text, $2::text, $3::jsonb)
     ON CONFLICT (run_key) DO UPDATE SET statement = EXCLUDED.statement, created_at = now()`,
    [input.runKey, input.externalRef, JSON.stringify(input.statement)],
  );
}

/** The latest statement of a tenant, or undefined when it was never closed by a run that writes one. */
export async function findLatestCloseStatement(
  db: Queryable,
  externalRef: string,
): Promise<{ statement: Record<string, unknown>; createdAt: Date } | undefined> {
  const { rows } = await db.query<{ statement: Record<string, unknown>; createdAt: Date }>(
    `SELECT statement, created_at AS "createdAt" FROM close_statements
      WHERE external_ref = $1::text ORDER BY created_at DESC LIMIT 1`,
    [externalRef],
  );
  return rows[0];
}
