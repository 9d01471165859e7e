import { describe, expect, it } from 'vitest';
import { DEFAULT_SEED } from '../../src/sim/seed.js';
import { addApiKey, countActiveKeys, createState, keysOfOwner } from '../../src/sim/state.js';

describe("the simulator's keys by owner", () => {
  it("lists each owner's keys alone, oldest first, and counts the active ones, as a scan of every key would", () => {
    const state = createState(DEFAULT_SEED, 0);
    const parent = DEFAULT_SEED.parents[0]!.id;
    const add = (subaccountId: string | null, name: string) =>
      addApiKey(state, {
        kind: subaccountId ? 'tenant' : 'platform',
        parentId: parent,
        subaccountId,
        name,
        tokenHash: `hash-${name}`,
        createdAt: 0,
      });
    const a1 = add('sub_a', 'a1');
    add('sub_b', 'b1');
    const a2 = add('sub_a', 'a2');
    const own = add(null, 'own');
    a1.status = 'revoked';

    const scan = (subaccountId: string | null) =>
      [...state.apiKeys.values()].filter((k) => k.parentId === parent && k.subaccountId === subaccountId);
    for (const owner of ['sub_a', 'sub_b', null, 'sub_none'])
      expect(keysOfOwner(state, parent, owner), String(owner)).toEqual(scan(owner));
    expect(keysOfOwner(state, parent, 'sub_a').map((k) => k.name)).toEqual(['a1', 'a2']);
    expect(keysOfOwner(state, parent, null)).toContain(own);
    expect(keysOfOwner(state, 'parent_other', 'sub_a')).toEqual([]);
    expect(countActiveKeys(state, parent, 'sub_a')).toBe(1);
    expect(a2.status).toBe('active');
  });
});
