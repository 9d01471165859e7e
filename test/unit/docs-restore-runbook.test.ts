import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RESTORE_DRIFT_POLICY } from '../../chaos/options.js';
import { FIX_OF_KIND } from '../../src/domain/drift-kinds.js';
import { parseDriftPolicies } from '../../src/domain/drift-policy.js';

const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
const section = /### Restoring Postgres from a backup\n([\s\S]*?)\n### /.exec(page)?.[1] ?? '';

describe('docs/operations.md, "Restoring Postgres from a backup"', () => {
  it('sets exactly the drift policy the restore drill recovers with, and it parses', () => {
    expect(section).toContain(`\`DRIFT_POLICY=${RESTORE_DRIFT_POLICY}\``);
    expect(parseDriftPolicies(RESTORE_DRIFT_POLICY).problems).toEqual([]);
  });

  it('names every fix the policy turns on; the one that changes the platform does it through the quiet gate', () => {
    const { policies } = parseDriftPolicies(RESTORE_DRIFT_POLICY);
    for (const kind of Object.keys(policies)) {
      const fix = FIX_OF_KIND[kind as keyof typeof FIX_OF_KIND]!;
      expect(section, kind).toContain(`\`${fix}\``);
    }
    // The only platform-changing fix on: a superseded key of ours, revoked once quiet (never the slot's only key).
    const changesPlatform = Object.keys(policies).filter((kind) => kind === 'key_orphan');
    expect(changesPlatform).toEqual(['key_orphan']);
    expect(section).toMatch(/`revoke_orphan_key`[^.]*quiet/);
  });
});
