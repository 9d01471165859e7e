import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MasterKeyConfigError, SecretsErrorCode } from '../../src/secrets/errors.js';
import { generateMasterKey, parseMasterKeys, safeParseMasterKeys } from '../../src/secrets/master-keys.js';

const b64 = (bytes: number): string => randomBytes(bytes).toString('base64');

function problemsOf(value: string): readonly string[] {
  const result = safeParseMasterKeys(value);
  if (result.ok) throw new Error('expected SECRETS_KEYS to be rejected');
  return result.problems;
}

describe('parseMasterKeys', () => {
  it('makes the first entry current and keeps every entry for decryption', () => {
    const ring = parseMasterKeys(`new:${b64(32)}, old_1:${b64(32)},older-2:${b64(32)}`);
    expect(ring.current.id).toBe('new');
    expect([...ring.byId.keys()]).toEqual(['new', 'old_1', 'older-2']);
    expect(ring.current.material()).toHaveLength(32);
  });

  it('accepts the output of generateMasterKey', () => {
    const entry = generateMasterKey('dev');
    expect(entry).toMatch(/^dev:[A-Za-z0-9+/]{43}=$/);
    expect(parseMasterKeys(entry).current.id).toBe('dev');
    expect(generateMasterKey('dev')).not.toBe(entry);
  });

  it('rejects an empty value', () => {
    expect(problemsOf('')).toEqual([expect.stringContaining('empty')]);
    expect(problemsOf('   ')).toEqual([expect.stringContaining('empty')]);
  });

  it('rejects a stray comma, naming the entry', () => {
    expect(problemsOf(`a:${b64(32)},`)).toEqual(['entry 2 is empty (stray comma?)']);
  });

  it('rejects a key that is not base64 without echoing it', () => {
    const notBase64 = 'this-is-not*base64!!';
    const problems = problemsOf(`a:${notBase64}`);
    expect(problems).toEqual([expect.stringMatching(/^entry 1 \(key id "a"\) is not standard base64/)]);
    expect(problems.join()).not.toContain(notBase64);
  });

  it('rejects a 16-byte key without echoing it', () => {
    const short = b64(16);
    const problems = problemsOf(`a:${b64(32)},b:${short}`);
    expect(problems).toEqual([
      expect.stringMatching(/^entry 2 \(key id "b"\) decodes to 16 bytes; AES-256 needs exactly 32/),
    ]);
    expect(problems.join()).not.toContain(short);
  });

  it('rejects duplicate key ids, naming both entries', () => {
    expect(problemsOf(`a:${b64(32)},b:${b64(32)},a:${b64(32)}`)).toEqual([
      'entry 3 repeats key id "a" (first used by entry 1); ids must be unique',
    ]);
  });

  it('rejects bad ids and a missing colon without quoting either, so a reversed entry cannot leak its key', () => {
    const key = b64(32);
    const problems = problemsOf(`${key}:main,${key},bad id!:${b64(32)}`);
    expect(problems).toEqual([
      expect.stringMatching(/^entry 1 has an invalid key id/),
      expect.stringMatching(/^entry 2 has no ":"/),
      expect.stringMatching(/^entry 3 has an invalid key id/),
    ]);
    expect(problems.join()).not.toContain(key);
    expect(problems.join()).not.toContain(key.slice(0, 8));
  });

  it('throws one error listing every problem, with a code and no key material', () => {
    const key = b64(16);
    let caught: unknown;
    try {
      parseMasterKeys(`a:${key},,a:${key}`);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(MasterKeyConfigError);
    const error = caught as MasterKeyConfigError;
    expect(error.name).toBe('MasterKeyConfigError');
    expect(error.code).toBe(SecretsErrorCode.invalidMasterKeys);
    expect(error.problems).toHaveLength(3);
    expect(error.message).not.toContain(key);
  });

  it('never shows key material when a key is logged or serialized', () => {
    const key = b64(32);
    const ring = parseMasterKeys(`a:${key}`);
    const hex = ring.current.material().toString('hex');
    for (const shown of [JSON.stringify(ring.current), inspect(ring, { depth: 5 }), String(ring.current)]) {
      expect(shown).not.toContain(key);
      expect(shown).not.toContain(hex);
    }
    expect(JSON.stringify(ring.current)).toBe('{"id":"a"}');
  });
});
