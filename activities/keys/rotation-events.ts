import type pg from 'pg';
import { emitEvent } from '../../src/db/events-store.js';
import type { KeyRotationRow } from '../../src/db/key-rotations-store.js';
import { prepared, type Queryable } from '../../src/db/pool.js';
import { findKeyRecord } from '../../src/db/tenant-keys-store.js';

/** A rotation's state before a change, under the row lock the change takes anyway. */
export async function lockRotationState(db: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ state: string }>(
    prepared(`SELECT state FROM key_rotations WHERE id = $1::bigint FOR UPDATE`, [id]),
  );
  return rows[0]?.state;
}

/** The event of a rotation that just moved to completed, held or key_limit (none for the other states). */
export async function emitRotationEvent(tx: pg.PoolClient, row: KeyRotationRow): Promise<void> {
  const base = {
    externalRef: row.externalRef,
    rotationId: row.id,
    slot: row.slot,
    fromGeneration: row.fromGeneration,
    toGeneration: row.toGeneration,
    state: row.state,
  };
  if (row.state === 'completed') {
    const [next, previous] = await Promise.all([
      findKeyRecord(tx, row.externalRef, row.slot, row.toGeneration),
      findKeyRecord(tx, row.externalRef, row.slot, row.fromGeneration),
    ]);
    await emitEvent(tx, {
      type: 'key.rotated',
      externalRef: row.externalRef,
      data: {
        ...base,
        keyId: next?.platformKeyId ?? null,
        fingerprint: next?.fingerprint ?? null,
        previousKeyId: previous?.platformKeyId ?? null,
        previousFingerprint: previous?.fingerprint ?? null,
      },
    });
  } else if (row.state === 'held') {
    const reason = row.outcome['heldReason'];
    await emitEvent(tx, {
      type: 'rotation.held',
      externalRef: row.externalRef,
      data: { ...base, heldReason: typeof reason === 'string' ? reason : null },
    });
  } else if (row.state === 'key_limit') {
    const keys = row.outcome['activeKeys'];
    await emitEvent(tx, {
      type: 'rotation.key_limit',
      externalRef: row.externalRef,
      data: {
        ...base,
        activeKeyIds: Array.isArray(keys) ? keys.map((k) => String((k as { id?: unknown }).id ?? '')) : [],
      },
    });
  }
}
