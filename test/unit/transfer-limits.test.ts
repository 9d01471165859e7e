import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { shortfallDetail, shortfallHolds } from '../../src/domain/parent-shortfall.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import {
  assertWithinTransferLimit,
  DEFAULT_TRANSFER_MAX_MICRO_USD,
  transferLimitProblem,
  transferLimitProblems,
} from '../../src/domain/transfer-limit.js';
import { createInputValidationActivities } from '../../activities/input-validation.js';

describe('the largest single transfer (TRANSFER_MAX_MICRO_USD)', () => {
  it('defaults to 10,000 USD', () => {
    expect(DEFAULT_TRANSFER_MAX_MICRO_USD).toBe('10000000000');
    expect(loadConfig({}).TRANSFER_MAX_MICRO_USD).toBe('10000000000');
    expect(loadConfig({ TRANSFER_MAX_MICRO_USD: '5000000' }).TRANSFER_MAX_MICRO_USD).toBe('5000000');
  });

  it('refuses a configured limit that is not a positive whole number, naming the setting', () => {
    for (const bad of ['0', '-1', '1e10', '10.5', 'lots', '1'.repeat(31)]) {
      const error = (() => {
        try {
          loadConfig({ TRANSFER_MAX_MICRO_USD: bad });
        } catch (e) {
          return e;
        }
      })();
      expect(error, bad).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^TRANSFER_MAX_MICRO_USD: /)]);
    }
  });

  it('allows the limit itself and refuses one micro-USD more, naming the field and the setting', () => {
    expect(transferLimitProblem('amountMicroUsd', '10000000000')).toBeNull();
    expect(transferLimitProblem('amountMicroUsd', '10000000001')).toBe(
      'amountMicroUsd: must be at most 10000000000 micro-USD (TRANSFER_MAX_MICRO_USD)',
    );
    expect(transferLimitProblem('to', '500', '499')).toMatch(/^to: must be at most 499 micro-USD/);
  });

  it('compares as integers, never as JS numbers (a 30-digit amount is not rounded under the limit)', () => {
    const max = '9007199254740993'; // 2^53 + 1: a number would round it down to 2^53
    expect(transferLimitProblem('amountMicroUsd', '9007199254740993', max)).toBeNull();
    expect(transferLimitProblem('amountMicroUsd', '9007199254740994', max)).not.toBeNull();
    expect(transferLimitProblem('amountMicroUsd', '1'.repeat(30))).not.toBeNull();
  });

  it("leaves absent and malformed amounts to their schema's own rule", () => {
    expect(transferLimitProblems({ fundingMicroUsd: undefined, a: null, b: '1e99', c: '-5', d: '007' })).toEqual([]);
  });

  it('names every amount above the limit at once', () => {
    expect(() => assertWithinTransferLimit({ a: '11', b: '10', c: '12' }, '10')).toThrow(InvalidInputError);
    try {
      assertWithinTransferLimit({ a: '11', b: '10', c: '12' }, '10');
    } catch (error) {
      expect((error as InvalidInputError).problems.map((p) => p.split(':')[0])).toEqual(['a', 'c']);
    }
  });

  it("holds a run's input to the worker's own limit, whoever started it", async () => {
    const { validateWorkflowInput } = createInputValidationActivities(undefined, '1000');
    const topUp = { externalRef: 'ref-1', idempotencyKey: 'key-1', amountMicroUsd: '1001' };
    const refusal = await validateWorkflowInput({ schema: 'fundTenant', input: topUp, workflowType: 'fundTenant' })
      .then(() => undefined)
      .catch((e: unknown) => e as { type?: string; message: string });
    expect(refusal?.type).toBe('INVALID_INPUT');
    expect(refusal?.message).toMatch(/amountMicroUsd: .*TRANSFER_MAX_MICRO_USD/);
    const onboarding = { externalRef: 'ref-1', name: 'N', fundingMicroUsd: '1001' };
    await expect(
      validateWorkflowInput({ schema: 'onboardTenant', input: onboarding, workflowType: 'onboardTenant' }),
    ).rejects.toMatchObject({ type: 'INVALID_INPUT' });
    await expect(
      validateWorkflowInput({
        schema: 'fundTenant',
        input: { ...topUp, amountMicroUsd: '1000' },
        workflowType: 'fundTenant',
      }),
    ).resolves.toMatchObject({ amountMicroUsd: '1000' });
  });
});

describe("the parent's recorded shortfall (INSUFFICIENT_BALANCE for one amount)", () => {
  const since = new Date('2030-01-02T03:04:05Z');

  it('holds nothing without a record', () => {
    expect(shortfallHolds({ since: null, refusedMicroUsd: null }, '1')).toBe(false);
  });

  it('lets a smaller amount go ahead and holds an equal or larger one', () => {
    const record = { since, refusedMicroUsd: '123456789012345678901234567890' };
    expect(shortfallHolds(record, '5000')).toBe(false);
    expect(shortfallHolds(record, '123456789012345678901234567889')).toBe(false);
    expect(shortfallHolds(record, '123456789012345678901234567890')).toBe(true);
    expect(shortfallHolds(record, '123456789012345678901234567891')).toBe(true);
  });

  it('holds every amount when the refused amount is not recorded (a state from before it was)', () => {
    expect(shortfallHolds({ since, refusedMicroUsd: null }, '1')).toBe(true);
  });

  it('names the refused amount, when it was refused, and the way out', () => {
    const detail = shortfallDetail({ since, refusedMicroUsd: '900' }, '900');
    expect(detail).toContain('900 micro-USD for INSUFFICIENT_BALANCE at 2030-01-02T03:04:05.000Z');
    expect(detail).toContain('tenantctl parent-funded');
  });
});
