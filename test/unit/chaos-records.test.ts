import { describe, expect, it } from 'vitest';
import { compareRecords, type KeyRow } from '../../chaos/check/records.js';
import type { Operation } from '../../chaos/driver.js';

/**
 * The chaos checker's key rule: at rest a tenant has exactly one active key, on the platform and in
 * our records; a rotation or close still running at the deadline may show its overlap key, which
 * must still be one of ours.
 */
const ref = 'chaos-t-1';
const sub = {
  id: 'sub_1',
  parentId: 'p',
  name: 'n',
  externalRef: ref,
  status: 'active',
  balanceMicroUsd: '0',
  createdAt: '',
};
const platformKey = (id: string, name: string) => ({
  id,
  kind: 'tenant' as const,
  parentId: 'p',
  subaccountId: sub.id,
  name,
  status: 'active' as const,
  createdAt: '',
  revokedAt: null,
  lastUsedAt: null,
});
const op = (kind: Operation['kind'], outcome: string): Operation =>
  ({
    kind,
    externalRef: ref,
    workflowId: `${kind}:${ref}`,
    outcome,
    accepted: ['completed'],
    detail: null,
  }) satisfies Operation;

function keyViolations(keys: KeyRow[], simKeys: ReturnType<typeof platformKey>[], operations: Operation[]) {
  const results = compareRecords(
    { tenants: [{ external_ref: ref, subaccount_id: sub.id, status: 'active' }], intents: [], keys },
    { subaccounts: [sub], transfers: [], apiKeys: simKeys },
    'chaos-',
    operations,
  );
  return results.flatMap((r) => r.violations);
}

const old: KeyRow = { external_ref: ref, platform_key_id: 'key_old', status: 'active', key_name: 'old' };
const creating: KeyRow = { external_ref: ref, platform_key_id: null, status: 'creating', key_name: 'new' };

describe('chaos records check: keys', () => {
  it(
    'a rotation in flight at the deadline may show its new key, recorded by name ' + 'while its answer is on the way',
    () => {
      const violations = keyViolations(
        [old, creating],
        [platformKey('key_old', 'old'), platformKey('key_new', 'new')],
        [op('onboard', 'completed'), op('rotate', 'unfinished')],
      );
      expect(violations).toEqual([]);
    },
  );

  it('a second active key with no record of ours is a violation even while a rotation is in flight', () => {
    const violations = keyViolations(
      [old],
      [platformKey('key_old', 'old'), platformKey('key_x', 'stranger')],
      [op('onboard', 'completed'), op('rotate', 'unfinished')],
    );
    expect(violations.join('\n')).toMatch(/operation in flight at the deadline\): 2 active key/);
  });

  it('once the rotation completed, two active keys are a violation', () => {
    const violations = keyViolations(
      [old, { ...creating, status: 'active', platform_key_id: 'key_new' }],
      [platformKey('key_old', 'old'), platformKey('key_new', 'new')],
      [op('onboard', 'completed'), op('rotate', 'completed')],
    );
    expect(violations.join('\n')).toMatch(/2 active key\(s\) on the platform/);
  });

  it('a suspended tenant may keep a lost key unmanaged (replaced on resume); an active one may not', () => {
    const unmanaged: KeyRow = { ...old, status: 'unmanaged' };
    const check = (status: 'active' | 'suspended') =>
      compareRecords(
        { tenants: [{ external_ref: ref, subaccount_id: sub.id, status }], intents: [], keys: [unmanaged] },
        { subaccounts: [{ ...sub, status }], transfers: [], apiKeys: [platformKey('key_old', 'old')] },
        'chaos-',
        [op('onboard', 'completed'), ...(status === 'suspended' ? [op('suspend', 'completed')] : [])],
      ).flatMap((r) => r.violations);
    expect(check('suspended')).toEqual([]);
    expect(check('active').join('\n')).toMatch(/our record: unmanaged/);
  });
});
