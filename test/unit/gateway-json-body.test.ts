import { describe, expect, it } from 'vitest';
import { forbiddenKeyPath, unstorableTextPath } from '../../src/gateway/http/json-body.js';

describe('forbidden keys in a JSON body', () => {
  it('names a __proto__ or constructor.prototype key wherever it is, and passes ordinary bodies', () => {
    expect(forbiddenKeyPath(JSON.parse('{"__proto__":{"admin":true}}'))).toBe('__proto__');
    expect(forbiddenKeyPath(JSON.parse('{"options":{"list":[{"__proto__":1}]}}'))).toBe('options.list.0.__proto__');
    expect(forbiddenKeyPath(JSON.parse('{"a":{"constructor":{"prototype":{"x":1}}}}'))).toBe('a.constructor.prototype');
    expect(forbiddenKeyPath(JSON.parse('{"constructor":"a name","proto":1,"prototype":2}'))).toBeUndefined();
    expect(forbiddenKeyPath(null)).toBeUndefined();
  });

  it('walks a body nested deeper than the call stack without throwing', () => {
    const depth = 60_000;
    const deep = JSON.parse(`${'['.repeat(depth)}{"__proto__":0}${']'.repeat(depth)}`) as unknown;
    expect(forbiddenKeyPath(deep)).toBe(`${Array(depth).fill('0').join('.')}.__proto__`);
  });
});

describe('text no field can store, anywhere in a JSON body', () => {
  it('names the path of a NUL or lone surrogate in a value or a key, and passes ordinary text', () => {
    expect(unstorableTextPath(JSON.parse('{"reason":"a\\u0000b"}'))).toEqual({ path: 'reason', what: 'NUL (\\u0000)' });
    expect(unstorableTextPath(JSON.parse('{"a":{"list":["ok","\\u0000"]}}'))).toMatchObject({ path: 'a.list.1' });
    expect(unstorableTextPath(JSON.parse('{"label":"x\\ud800"}'))).toEqual({ path: 'label', what: 'a lone surrogate' });
    expect(unstorableTextPath(JSON.parse('{"a\\u0000b":1}'))).toMatchObject({ path: 'a\\u0000b' });
    expect(unstorableTextPath(JSON.parse('"\\u0000"'))).toMatchObject({ path: '' });
    expect(unstorableTextPath(JSON.parse('{"name":"Café 😀 \\t","n":[1,null,true]}'))).toBeUndefined();
  });
});
