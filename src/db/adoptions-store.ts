import type { KeyRotationRow } from './key-rotations-store.js';
import type { Queryable } from './pool.js';

/**
 * An adoption rotation is a key_rotations row (so a close, drift and `tenantctl status` see it open,
 * and one open rotation per slot still holds) marked `outcome.adoption`. Its `to_generation` is the
 * managed key that replaces the slot's unmanaged keys; a second adoption after an abort reopens the
 * row of that same managed key instead of issuing another one.
 */
export async function listUnmanagedKeys(
  db: Queryable,
  externalRef: string,
  slot: string,
): Promise<Array<{ keyId: string; generation: number }>> {
  const { rows } = await db.query<{ keyId: string; generation: number }>(
    `SELECT platform_key_id AS "keyId", generation FROM tenant_keys
      WHERE external_ref = $1::text AND slot = $2::text AND status = 'unmanaged' ORDER BY generation`,
    [externalRef, slot],
  );
  return rows;
}

export async function openAdoptionRow(
  db: Queryable,
  input: {
    externalRef: string;
    slot: string;
    fromGeneration: number;
    toGeneration: number;
    deployer: string;
    workflowId: string;
    runId: string;
  },
): Promise<Pick<KeyRotationRow, 'id' | 'fromGeneration' | 'toGeneration'>> {
  const { rows } = await db.query<Pick<KeyRotationRow, 'id' | 'fromGeneration' | 'toGeneration'>>(
    `INSERT INTO key_rotations (external_ref, slot, from_generation, to_generation, state, stage, deployer,
      workflow_id, run_id, outcome)
     VALUES ($1::text, $2::text, $3::int, $4::int, 'running', 'creating_key', $5::text, $6::text, $7::text,
       '{"adoption": true}'::jsonb)
     ON CONFLICT (external_ref, slot, to_generation) DO UPDATE SET
       state = 'running', stage = 'creating_key', from_generation = EXCLUDED.from_generation, deployer =
         EXCLUDED.deployer,
       workflow_id = EXCLUDED.workflow_id, run_id = EXCLUDED.run_id, finished_at = NULL,
       outcome = key_rotations.outcome || '{"adoption": true}'::jsonb, updated_at = now()
     RETURNING id, from_generation AS "fromGeneration", to_generation AS "toGeneration"`,
    [
      input.externalRef,
      input.slot,
      input.fromGeneration,
      input.toGeneration,
      input.deployer,
      input.workflowId,
      input.runId,
    ],
  );
  return rows[0]!;
}

export async function findKeyByPlatformId(
  db: Queryable,
  externalRef: string,
  keyId: string,
): Promise<{ id: string; status: string; slot: string; generation: number } | undefined> {
  const { rows } = await db.query<{ id: string; status: string; slot: string; generation: number }>(
    `SELECT id, status, slot, generation FROM tenant_keys WHERE external_ref = $1::text AND platform_key_id = $2::text`,
    [externalRef, keyId],
  );
  return rows[0];
}

/** Active tenants with unmanaged keys in the slot, in external-ref order, a page at a time (the fleet adoption). */
export async function listAdoptableTenantRefs(
  db: Queryable,
  options: { slot: string; after: string | null; limit: number },
): Promise<string[]> {
  const { rows } = await db.query<{ externalRef: string }>(
    `SELECT t.external_ref AS "externalRef" FROM tenants t
      WHERE t.status = 'active' AND t.subaccount_id IS NOT NULL AND ($2::text IS NULL OR t.external_ref > $2::text)
        AND EXISTS (SELECT 1 FROM tenant_keys k WHERE k.external_ref = t.external_ref AND k.slot = $1::text AND
          k.status = 'unmanaged')
      ORDER BY t.external_ref LIMIT $3::int`,
    [options.slot, options.after, options.limit],
  );
  return rows.map((r) => r.externalRef);
}
