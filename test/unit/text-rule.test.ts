import { describe, expect, it } from 'vitest';
import { pathSegmentProblem } from '../../src/domain/path-segment.js';
import { checkText } from '../../src/domain/text-rule.js';
import { freeText } from '../../src/domain/text.js';
import { InvalidInputError, lifecycleInputSchema, parseInput } from '../../src/domain/tenant-input.js';
import { checkDecisionBy } from '../../src/domain/operator-decisions.js';
import { fillPath } from '../../src/platform/paths.js';
import { PlatformInputError } from '../../src/platform/errors.js';
import { createRegistryWebhook, updateRegistryWebhook } from '../../src/client/webhooks/webhook-management.js';

const oneLine = { max: 10 };
const reason = { min: 3, max: 20, multiline: true };

describe('the one free-text rule', () => {
  it.each([
    ['NUL', 'a\u0000b'],
    ['another C0 control', 'a\u0007b'],
    ['DEL', 'a\u007fb'],
    ['a C1 control', 'a\u0085b'],
    ['a right-to-left override', 'abc\u202Edef'],
    ['a bidi isolate', 'abc\u2066def'],
    ['a zero-width space', 'ab\u200Bc'],
    ['a byte order mark inside', 'ab\uFEFFc'],
    ['a line separator', 'ab\u2028c'],
    ['a lone high surrogate', 'ab\uD800c'],
    ['a lone low surrogate', 'ab\uDC00c'],
  ])('refuses %s', (_what, value) => {
    expect(checkText(value, oneLine).ok).toBe(false);
    expect(checkText(value, reason).ok).toBe(false);
  });

  it('refuses line breaks and tabs in one-line fields, allows LF and tab in multiline ones (CRLF read as LF)', () => {
    for (const value of ['a\nb', 'a\tb', 'a\rb', 'a\r\nb']) expect(checkText(value, oneLine).ok).toBe(false);
    expect(checkText('line one\r\nline\ttwo', reason)).toEqual({ ok: true, value: 'line one\nline\ttwo' });
    expect(checkText('a\rb c', reason).ok).toBe(false);
  });

  it('trims, normalises to NFC and counts code points', () => {
    const decomposed = 'Cafe\u0301';
    const composed = 'Caf\u00e9';
    expect(checkText(`  ${decomposed}  `, oneLine)).toEqual({ ok: true, value: composed });
    expect(freeText(oneLine).parse(decomposed)).toBe(freeText(oneLine).parse(composed));
    // Ten emoji are ten characters (20 UTF-16 units); joiners inside emoji sequences are allowed.
    expect(checkText('😀'.repeat(10), oneLine).ok).toBe(true);
    expect(checkText('😀'.repeat(11), oneLine).ok).toBe(false);
    expect(checkText('👩\u200D💻', oneLine).ok).toBe(true);
  });

  it('refuses surrounding white space instead of trimming where the rule says so (tenant names)', () => {
    expect(checkText(' padded ', { max: 10, trim: false }).ok).toBe(false);
    expect(checkText('Cafe\u0301', { max: 10, trim: false })).toEqual({ ok: true, value: 'Caf\u00e9' });
  });

  it('refuses too long, empty and too short', () => {
    expect(checkText('x'.repeat(11), oneLine)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/at most 10/),
    });
    expect(checkText('   ', oneLine)).toMatchObject({ ok: false, problem: 'must not be empty' });
    expect(checkText(' ab ', reason).ok).toBe(false);
    expect(checkText('', { max: 5, min: 0 })).toEqual({ ok: true, value: '' });
  });

  it('names the field in the schemas and in the Update validators', () => {
    const error = (() => {
      try {
        parseInput(lifecycleInputSchema, { externalRef: 'ref-1', reason: 'bad\u0000reason' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems).toEqual([expect.stringMatching(/^reason: must not contain control/)]);
    const decision = checkDecisionBy({ operator: 'alice', reason: 'because\u202Eevil' });
    expect(decision).toMatchObject({ ok: false, problems: [expect.stringMatching(/^reason: /)] });
    expect(checkDecisionBy({ operator: 'alice', reason: ' Cafe\u0301 closed ' })).toEqual({
      ok: true,
      value: { operator: 'alice', reason: 'Caf\u00e9 closed' },
    });
  });
});

describe('ids used as platform path segments', () => {
  it.each(['.', '..', '...', 'a/b', 'a\\b', '%2e', '%2e%2e', '..%2f', 'a?b', 'a#b', '..;', 'a b', 'a\u0000', ''])(
    'refuses %j, in the input rule and in the path builder',
    (value) => {
      expect(pathSegmentProblem(value)).toBeDefined();
      expect(() => fillPath('/projects/:projectId', { projectId: value })).toThrow(PlatformInputError);
    },
  );
  it('takes opaque ids as they are', () => {
    for (const id of ['proj_1', 'sub_a.b', 'key-1:x', 'a..b'])
      expect(fillPath('/projects/:projectId', { projectId: id })).toBe(`/projects/${encodeURIComponent(id)}`);
  });
});

describe('registry webhook registrations', () => {
  // Any use of a dependency fails the test: the input is refused before a row is written or a call made.
  const untouchable = new Proxy(
    {},
    {
      get(_target, name) {
        throw new Error(`no dependency may be used (read ${String(name)})`);
      },
    },
  );
  const deps = { pool: untouchable, platform: untouchable, vault: untouchable, publicUrl: 'https://gw' } as never;

  it.each([
    ['a dot-dot project id', { projectId: '..', label: 'x', events: ['*'] }, 'projectId'],
    ['a project id with a slash', { projectId: 'proj_1/../x', label: 'x', events: ['*'] }, 'projectId'],
    ['a NUL label', { projectId: 'proj_1', label: 'a\u0000', events: ['*'] }, 'label'],
    ['a bidi label', { projectId: 'proj_1', label: 'a\u202Eb', events: ['*'] }, 'label'],
  ])('refuses %s before anything is written', async (_what, input, field) => {
    const refusal = await createRegistryWebhook(deps, input).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidInputError);
    expect((refusal as InvalidInputError).problems).toEqual([expect.stringMatching(new RegExp(`^${field}: `))]);
  });

  it('refuses an update with a control character in the label before anything is read', async () => {
    const refusal = await updateRegistryWebhook(deps, { registrationId: 'whr_0123456789', label: 'x\u0007' }).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(InvalidInputError);
  });
});
