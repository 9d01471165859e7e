import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { safeOpsOf } from '../../src/main/wiring/safe-ops.js';

describe('operator identities and the safe-operation defaults', () => {
  const alice = generateOperator('alice');
  const bob = generateOperator('bob');

  it('authenticates a token by its hash only; an unknown token is nobody', () => {
    const parsed = parseOperatorList(`${alice.entry}, ${bob.entry}`);
    if (!parsed.ok) throw new Error(parsed.problems.join('; '));
    const directory = createOperatorDirectory(parsed.operators);
    expect(alice.entry).not.toContain(alice.token);
    expect(directory.authenticate(alice.token)).toBe('alice');
    expect(directory.authenticate(bob.token)).toBe('bob');
    expect(directory.authenticate(`${alice.token}x`)).toBeUndefined();
  });

  it('names each bad entry by position without echoing it, and refuses repeated names or tokens', () => {
    const parsed = parseOperatorList(`alice:${'a'.repeat(64)},${alice.entry},${alice.entry.replace('alice', 'carol')}`);
    expect(parsed).toEqual({
      ok: false,
      problems: [
        expect.stringMatching(/^entry 1 must be name\[:role\]:sha256:/),
        expect.stringMatching(/^entry 3 \(carol\) has the same token/),
      ],
    });
    expect(JSON.stringify(parsed)).not.toContain('a'.repeat(64));
  });

  it('with OPERATORS: closes wait 30d and resolveTransfer and keyReveal need approval; without: as before', () => {
    const prod = safeOpsOf(loadConfig({ OPERATORS: alice.entry }));
    expect(prod).toMatchObject({ closeDelay: '30d', approvalTtlMs: 86_400_000 });
    expect([...prod.approvals]).toEqual(['resolveTransfer', 'keyReveal']);
    const dev = safeOpsOf(loadConfig({}));
    expect(dev.closeDelay).toBe('0');
    expect(dev.approvals.size).toBe(0);
    expect(dev.operators.size).toBe(0);
    expect(safeOpsOf(loadConfig({ OPERATORS: alice.entry, APPROVAL_POLICY: 'none', CLOSE_DELAY: '0' }))).toMatchObject({
      closeDelay: '0',
    });
  });

  it('reports every bad setting at once', () => {
    const attempt = () =>
      loadConfig({ OPERATORS: 'alice', CLOSE_DELAY: '400d', APPROVAL_POLICY: 'closeTenant', APPROVAL_TTL: '0s' });
    expect(attempt).toThrow(ConfigError);
    const problems = (() => {
      try {
        attempt();
      } catch (error) {
        return (error as ConfigError).problems;
      }
      return [];
    })();
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'OPERATORS',
      'CLOSE_DELAY',
      'APPROVAL_POLICY',
      'APPROVAL_TTL',
    ]);
    expect(() => loadConfig({ APPROVAL_POLICY: 'keyReveal' })).toThrow(/APPROVAL_POLICY: needs OPERATORS/);
  });
});
