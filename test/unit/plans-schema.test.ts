import { describe, expect, it } from 'vitest';
import { SCHEDULE_EVERY } from '../../src/client/schedule-every.js';
import { EVENT_TYPES_NOT_YET_EMITTED, subscribeInputSchema } from '../../src/domain/events.js';
import {
  createPlanInputSchema,
  planBodySchema,
  planVersionSchema,
  ROTATION_INTERVAL_PATTERN,
  updatePlanInputSchema,
} from '../../src/domain/plans.js';
import { InvalidInputError, parseInput } from '../../src/domain/tenant-input.js';

/**
 * A plan's body and its ways in: each rule refuses a bad value with one problem naming the field
 * (`field: rule`), as every other input does; a good plan passes whole.
 */
const GOOD = {
  initialFundingMicroUsd: '5000000',
  keySlots: ['default', 'ci'],
  rotation: { interval: '90d', quietPeriod: '1h', overlapWindow: '2h', deployer: { kind: 'notify' } },
  autoTopUp: { below: '1000000', to: '5000000', maxPerDay: '20000000', maxPerMonth: '100000000' },
  resumeBalanceFloorMicroUsd: '0',
  closeDelay: '30d',
};

function problemsOf(schema: Parameters<typeof parseInput>[0], value: unknown): string[] {
  try {
    parseInput(schema, value);
    return [];
  } catch (error) {
    if (error instanceof InvalidInputError) return error.problems;
    throw error;
  }
}

describe('a plan body', () => {
  it('accepts a whole plan, and one that names only its key slots', () => {
    expect(planBodySchema.parse(GOOD)).toEqual(GOOD);
    expect(planBodySchema.parse({ keySlots: ['default'] })).toEqual({ keySlots: ['default'] });
  });

  it.each([
    [
      'initialFundingMicroUsd',
      { initialFundingMicroUsd: '-5' },
      /^initialFundingMicroUsd: must be a string of a positive whole number of micro-USD/,
    ],
    ['initialFundingMicroUsd', { initialFundingMicroUsd: 5000000 }, /^initialFundingMicroUsd: must be a string/],
    ['initialFundingMicroUsd', { initialFundingMicroUsd: '0' }, /^initialFundingMicroUsd: must be /],
    ['keySlots', { keySlots: undefined }, /^keySlots: is required$/],
    ['keySlots', { keySlots: [] }, /^keySlots: must name at least one slot/],
    ['keySlots', { keySlots: 'default' }, /^keySlots: must be a list of slots$/],
    ['keySlots.1', { keySlots: ['default', 'Prod_Web'] }, /^keySlots\.1: must be 1-32 characters of a-z 0-9 -/],
    ['keySlots', { keySlots: ['ci', 'ci'] }, /^keySlots: must not repeat a slot$/],
    ['keySlots', { keySlots: Array.from({ length: 33 }, (_, i) => `s${i}`) }, /^keySlots: must name at most 32 slots$/],
    ['rotation.interval', { rotation: { quietPeriod: '1h' } }, /^rotation\.interval: is required$/],
    [
      'rotation.interval',
      { rotation: { interval: '90 days' } },
      /^rotation\.interval: must be a duration like 12h or 30d/,
    ],
    [
      'rotation.interval',
      { rotation: { interval: '0d' } },
      /^rotation\.interval: must be a duration like 12h or 30d, longer than zero$/,
    ],
    ['rotation.interval', { rotation: { interval: '500ms' } }, /^rotation\.interval: must be a duration like 12h/],
    ['rotation.quietPeriod', { rotation: { interval: '30d', quietPeriod: 'soon' } }, /^rotation\.quietPeriod: /],
    ['rotation.overlapWindow', { rotation: { interval: '30d', overlapWindow: -1 } }, /^rotation\.overlapWindow: /],
    [
      'rotation.deployer.kind',
      { rotation: { interval: '30d', deployer: { kind: 'email' } } },
      /^rotation\.deployer\.kind: /,
    ],
    [
      'rotation.pollInterval',
      { rotation: { interval: '30d', pollInterval: '1m' } },
      /^rotation\.pollInterval: is not a known field$/,
    ],
    [
      'autoTopUp.below',
      { autoTopUp: { below: '5000000', to: '1000000', maxPerDay: '9' } },
      /^autoTopUp\.below: must be less than to$/,
    ],
    ['autoTopUp.maxPerDay', { autoTopUp: { below: '1', to: '2' } }, /^autoTopUp\.maxPerDay: is required$/],
    [
      'autoTopUp.updatedBy',
      { autoTopUp: { below: '1', to: '2', maxPerDay: '3', updatedBy: 'x' } },
      /^autoTopUp\.updatedBy: is not a known field$/,
    ],
    [
      'resumeBalanceFloorMicroUsd',
      { resumeBalanceFloorMicroUsd: '-1' },
      /^resumeBalanceFloorMicroUsd: must be a string of a whole number of micro-USD, 0 or more/,
    ],
    ['resumeBalanceFloorMicroUsd', { resumeBalanceFloorMicroUsd: 0 }, /^resumeBalanceFloorMicroUsd: must be /],
    [
      'closeDelay',
      { closeDelay: '400d' },
      /^closeDelay: must be 0 \(close at once\) or a duration like 12h or 30d, at most 365d$/,
    ],
    ['closeDelay', { closeDelay: 86_400_000 }, /^closeDelay: must be 0 /],
    ['color', { color: 'blue' }, /^color: is not a known field$/],
  ])('refuses a bad %s with one problem naming it', (_field, change, problem) => {
    const problems = problemsOf(planBodySchema, { ...GOOD, ...change });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(problem);
  });

  it('accepts a close at once and a floor of zero, as the server settings do', () => {
    expect(problemsOf(planBodySchema, { ...GOOD, closeDelay: '0', resumeBalanceFloorMicroUsd: '0' })).toEqual([]);
  });

  it('takes rotation intervals in the form rotation schedules take', () => {
    expect(ROTATION_INTERVAL_PATTERN.source).toBe(SCHEDULE_EVERY.source);
  });
});

describe('the create and update inputs', () => {
  it('name the plan and say why, and refuse a bad name by its rule', () => {
    expect(createPlanInputSchema.parse({ ...GOOD, name: 'pro.2026', reason: 'new tier' })).toMatchObject({
      name: 'pro.2026',
      reason: 'new tier',
    });
    for (const name of ['', '-starter', 'star/ter', 'a'.repeat(65), 7]) {
      const problems = problemsOf(createPlanInputSchema, { ...GOOD, name });
      expect(problems, String(name)).toHaveLength(1);
      expect(problems[0], String(name)).toMatch(/^name: must be /);
    }
    expect(problemsOf(createPlanInputSchema, GOOD)).toEqual(['name: is required']);
    expect(problemsOf(createPlanInputSchema, { ...GOOD, name: 'x', createdBy: 'alice' })).toEqual([
      'createdBy: is not a known field',
    ]);
  });

  it('takes an expected version as a whole number from 1, as JSON or as text', () => {
    expect(updatePlanInputSchema.parse({ ...GOOD, expectVersion: 3 }).expectVersion).toBe(3);
    expect(planVersionSchema.parse('12')).toBe(12);
    for (const bad of [0, -1, 1.5, '01', 'two', '', null, 2 ** 31]) {
      const problems = problemsOf(updatePlanInputSchema, { ...GOOD, expectVersion: bad });
      expect(problems, String(bad)).toEqual(['expectVersion: must be a whole number from 1 (1, 2, …)']);
    }
  });
});

describe('tenant.plan_changed', () => {
  it('is a type subscribers may name, emitted by an onboarding by plan', () => {
    const subscription = { url: 'https://hooks.example.com/tpo', types: ['tenant.plan_changed'] };
    expect(subscribeInputSchema.safeParse(subscription).success).toBe(true);
    expect(EVENT_TYPES_NOT_YET_EMITTED).toEqual([]);
  });
});
