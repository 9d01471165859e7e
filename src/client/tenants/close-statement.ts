import { findLatestCloseStatement } from '../../db/close-statements-store.js';
import type { Pool } from '../../db/pool.js';
import { getTenant } from '../../db/tenants-store.js';

export class StatementNotFoundError extends Error {
  override name = 'StatementNotFoundError';
}

/** A tenant's final statement (written by the close before the platform close); never a secret. */
export async function getCloseStatement(pool: Pool, externalRef: string): Promise<Record<string, unknown>> {
  await getTenant(pool, externalRef);
  const found = await findLatestCloseStatement(pool, externalRef);
  if (!found)
    throw new StatementNotFoundError(
      `tenant ${externalRef} has no final statement: a close writes it just before the platform close`,
    );
  return found.statement;
}
