import { describe, expect, it } from 'vitest';
import { actionInputOf } from '../../src/gateway/tenants/action-input.js';
import { InvalidInputError, lifecycleInputSchema, parseInput } from '../../src/domain/tenant-input.js';

/** The close's input takes the wait options; its carried state is the run's own, never a caller's. */
describe('close input', () => {
  it('takes pollCeiling and historyEventBound, checked like every waiting workflow', () => {
    const parsed = parseInput(lifecycleInputSchema, {
      externalRef: 't-1',
      reason: 'customer left',
      options: { pollCeiling: '1m', historyEventBound: 500 },
    });
    expect(parsed.options).toEqual({ pollCeiling: '1m', historyEventBound: 500 });
    expect(() =>
      parseInput(lifecycleInputSchema, { externalRef: 't-1', reason: 'left', options: { historyEventBound: 50 } }),
    ).toThrow(/options\.historyEventBound/);
  });

  it('refuses continued in an HTTP body, naming the field', () => {
    let error: unknown;
    try {
      actionInputOf('close', 't-1', { reason: 'customer left', continued: { phase: 'cleanup' } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems).toEqual(['continued: is not a known field']);
  });
});
