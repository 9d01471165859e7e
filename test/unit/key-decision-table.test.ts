import { describe, expect, it } from 'vitest';
import { refusalOf, type KeyDecisions } from '../../workflows/decision-table.js';
import { ROTATION_DECISIONS } from '../../workflows/keys/rotate-tenant-key-decisions.js';

type Stage = 'key_limit' | 'held' | 'done';
type Name = 'retry' | 'abort';

function spec(stage: Stage, extra: Partial<KeyDecisions<Stage, Name>> = {}): KeyDecisions<Stage, Name> {
  return {
    table: { retry: ['key_limit'], abort: ['key_limit', 'held'] },
    updates: {} as KeyDecisions<Stage, Name>['updates'],
    stage: () => stage,
    notAt: (name, stages) => `${name} applies at ${stages.join(', ')}`,
    take: () => 'taken',
    ...extra,
  };
}

describe('the key workflows’ decision table', () => {
  it('accepts a decision at a stage of its row and refuses it elsewhere with the row', () => {
    expect(refusalOf(spec('key_limit'), 'retry')).toBeNull();
    expect(refusalOf(spec('held'), 'abort')).toBeNull();
    expect(refusalOf(spec('held'), 'retry')).toBe('retry applies at key_limit');
    expect(refusalOf(spec('done'), 'abort')).toBe('abort applies at key_limit, held');
  });

  it('refuses a settled run whatever the stage, before the table, and applies a further condition after it', () => {
    const settled = spec('key_limit', { settled: () => 'already decided' });
    expect(refusalOf(settled, 'retry')).toBe('already decided');
    const also = spec('key_limit', { also: (name) => (name === 'abort' ? 'not now' : null) });
    expect(refusalOf(also, 'abort')).toBe('not now');
    expect(refusalOf(also, 'retry')).toBeNull();
    expect(refusalOf(spec('done', { also: () => 'not now' }), 'retry')).toBe('retry applies at key_limit');
  });

  it('lets a rotation be escalated at every stage before the old key is revoked, and never after', () => {
    expect(ROTATION_DECISIONS.escalateToEmergency).toEqual([
      'starting',
      'creating_key',
      'key_limit',
      'deploying',
      'verifying',
      'waiting_for_quiet',
      'held',
    ]);
    expect(ROTATION_DECISIONS.revokeAnyway).toEqual(['waiting_for_quiet', 'held']);
    expect(ROTATION_DECISIONS.abortRotation).toEqual(['key_limit', 'waiting_for_quiet', 'held']);
  });
});
