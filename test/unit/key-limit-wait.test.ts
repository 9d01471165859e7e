import { describe, expect, it } from 'vitest';
import { keyLimitDecideCommand, keyLimitWaitText } from '../../src/domain/key-limit-wait.js';

describe('the key-limit wait text', () => {
  it('names one verb, tenantctl decide, with the waiting run’s own id, for each kind of run', () => {
    expect(keyLimitDecideCommand({ kind: 'key-issue', externalRef: 'acme', slot: 'ci' }, 'retry-key-create')).toBe(
      'tenantctl decide key:acme:ci retry-key-create --reason <why>',
    );
    expect(keyLimitDecideCommand({ kind: 'rotation', externalRef: 'acme', slot: 'ci' }, 'abort')).toBe(
      'tenantctl decide rotate:acme:ci abort --reason <why>',
    );
    expect(keyLimitDecideCommand({ kind: 'parent-key' }, 'retry-key-create')).toBe(
      'tenantctl decide rotate-parent-key retry-key-create --reason <why>',
    );
  });

  it('lists the active keys, the unused guess when there is one, and when the create is tried again', () => {
    const text = keyLimitWaitText({
      run: { kind: 'rotation', externalRef: 'acme', slot: 'default' },
      activeKeys: [{ id: 'k1', name: 'one' }, { id: 'k2' }],
      unused: ['k2'],
      retryInMs: 5000,
    });
    expect(text).toMatch(/^the platform's active-key limit \(2 active keys: one, k2; keys that look unused: k2\): /);
    expect(text).toContain(
      '`tenantctl decide rotate:acme:default retry-key-create --reason <why>` (update retryKeyCreate)',
    );
    expect(text).toMatch(/\(update abortRotation\); the create is tried again by itself in 5000 ms$/);
  });
});
