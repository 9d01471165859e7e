import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { assertPlanWithinKeyLimit, planKeySlotsProblem, planSlotsOf } from '../../src/domain/plans.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';

/**
 * A plan's slots, with `default`, leave one key of room under the platform's cap on a tenant's active keys
 * (PLATFORM_TENANT_KEY_LIMIT), so a rotation's new key fits beside the old one: at most limit − 1.
 */
describe("a plan's slots against PLATFORM_TENANT_KEY_LIMIT", () => {
  it('allows limit − 1 slots with default and refuses one more, naming keySlots and the rule', () => {
    expect(planKeySlotsProblem({ keySlots: ['web'] }, 3)).toBeNull();
    expect(planKeySlotsProblem({ keySlots: ['default', 'web'] }, 3)).toBeNull();
    expect(planKeySlotsProblem({ keySlots: ['web', 'api'] }, 3)).toBe(
      "keySlots: a plan may have at most 2 slots with default (PLATFORM_TENANT_KEY_LIMIT 3, one key kept free for a rotation's new key), this one has 3",
    );
    expect(planKeySlotsProblem({ keySlots: ['default', 'web', 'api'] }, 3)).toMatch(/^keySlots: .* this one has 3$/);
    expect(planKeySlotsProblem({ keySlots: ['default', 'web', 'api'] }, 4)).toBeNull();
    expect(planKeySlotsProblem({ keySlots: ['default', 'web', 'api', 'ci'] }, 4)).toMatch(
      /^keySlots: a plan may have at most 3 slots with default \(PLATFORM_TENANT_KEY_LIMIT 4,/,
    );
  });

  it('counts default once, as the slots a tenant on the plan holds keys in', () => {
    expect(planSlotsOf({ keySlots: ['default', 'web'] })).toEqual(['default', 'web']);
    expect(planSlotsOf({ keySlots: ['web'] })).toEqual(['default', 'web']);
    // At the smallest limit a plan holds default alone.
    expect(planKeySlotsProblem({ keySlots: ['default'] }, 2)).toBeNull();
    expect(planKeySlotsProblem({ keySlots: ['web'] }, 2)).toMatch(/^keySlots: a plan may have at most 1 slot with /);
  });

  it('names plan and the version when a version is carried out (made under a higher limit)', () => {
    const problem = planKeySlotsProblem({ keySlots: ['web', 'api'] }, 3, { name: 'pro', version: 2 });
    expect(problem).toBe(
      "plan: pro@2's keySlots: a plan may have at most 2 slots with default (PLATFORM_TENANT_KEY_LIMIT 3, one key kept free for a rotation's new key), this one has 3",
    );
    expect(() => assertPlanWithinKeyLimit({ keySlots: ['web', 'api'] }, 3)).toThrow(InvalidInputError);
    try {
      assertPlanWithinKeyLimit({ keySlots: ['web', 'api'] }, 3, { name: 'pro', version: 2 });
    } catch (error) {
      expect((error as InvalidInputError).problems).toEqual([problem]);
    }
    expect(() => assertPlanWithinKeyLimit({ keySlots: ['web'] }, 3)).not.toThrow();
  });

  it('is a setting of 3 by default (the simulator cap), a whole number of at least 2', () => {
    expect(DEFAULTS.PLATFORM_TENANT_KEY_LIMIT).toBe(3);
    expect(loadConfig({}).PLATFORM_TENANT_KEY_LIMIT).toBe(3);
    expect(loadConfig({ PLATFORM_TENANT_KEY_LIMIT: '10' }).PLATFORM_TENANT_KEY_LIMIT).toBe(10);
    for (const bad of ['1', '0', '2.5', 'many']) {
      expect(() => loadConfig({ PLATFORM_TENANT_KEY_LIMIT: bad }), bad).toThrow(ConfigError);
      try {
        loadConfig({ PLATFORM_TENANT_KEY_LIMIT: bad });
      } catch (error) {
        expect((error as ConfigError).message, bad).toMatch(/PLATFORM_TENANT_KEY_LIMIT: /);
      }
    }
  });
});
