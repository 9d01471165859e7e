import { describe, expect, it } from 'vitest';
import { OPEN_ROTATION_STATES } from '../../src/db/key-rotations-store.js';
import { listMigrations } from '../../src/db/migrate.js';

/**
 * The open rotation states are spelled once in TypeScript (OPEN_ROTATION_STATES, bound into every query) and
 * once in SQL, where a partial index's predicate cannot take a parameter: one open rotation per slot. The two
 * lists must be the same, or a state the code calls open would escape the index (or the reverse).
 */
describe('open rotation states', () => {
  it('are the states of the one-open-rotation-per-slot index', () => {
    // The latest definition wins: a later migration may have made the index again.
    const sql = listMigrations()
      .map((m) => m.sql)
      .join('\n');
    const predicate = [...sql.matchAll(/key_rotations_one_open_per_slot[^;]*WHERE state IN \(([^)]*)\)/g)].at(-1)?.[1];
    expect(predicate, 'the index and its predicate').toBeDefined();
    const indexed = [...predicate!.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
    expect([...indexed].sort()).toEqual([...OPEN_ROTATION_STATES].sort());
  });
});
