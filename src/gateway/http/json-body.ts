import type { FastifyInstance } from 'fastify';
import { GatewayError, GatewayErrorCode } from './errors.js';

/**
 * The gateway's only body parser outside the webhook receiver (which keeps raw bytes): JSON, nothing
 * else, so `text/plain` is answered 415 instead of reaching a handler as a string. An empty body is
 * "no body" (action POSTs often send none). A key that could reach an object's prototype
 * (`__proto__`, `constructor.prototype`) is refused by name: it is valid JSON, but never a field of ours.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      done(new GatewayError(400, GatewayErrorCode.INVALID_JSON, 'The request body is not valid JSON.'), undefined);
      return;
    }
    const forbidden = forbiddenKeyPath(value);
    if (forbidden !== undefined) {
      done(
        new GatewayError(
          400,
          GatewayErrorCode.INVALID_INPUT,
          `${forbidden}: is not allowed (a reserved property name)`,
          { fields: [forbidden] },
        ),
        undefined,
      );
      return;
    }
    const unstorable = unstorableTextPath(value);
    if (unstorable !== undefined) {
      const field = unstorable.path || 'body';
      done(
        new GatewayError(
          400,
          GatewayErrorCode.INVALID_INPUT,
          `${field}: must not contain ${unstorable.what} (no field of ours takes one)`,
          { fields: [field] },
        ),
        undefined,
      );
      return;
    }
    done(null, value);
  });
}

// NUL: Postgres refuses it in text and jsonb, so it would fail late (a 500, or a run retrying forever). A lone
// surrogate cannot be encoded as UTF-8 and would be silently replaced on its way anywhere.
const NUL = '\u0000';
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The path of the first string (value or key) holding a NUL or a lone surrogate, anywhere in the value, and which.
 * Refused for every JSON body at once: no field of ours can store one, and a per-field check would be missed somewhere.
 */
export function unstorableTextPath(root: unknown): { path: string; what: string } | undefined {
  type Node = { value: unknown; key: string | undefined; parent: Node | undefined };
  const pathOf = (node: Node | undefined): string => {
    const keys: string[] = [];
    for (let at = node; at?.key !== undefined; at = at.parent) keys.unshift(at.key);
    return keys.join('.');
  };
  const problem = (text: string) =>
    text.includes(NUL) ? 'NUL (\\u0000)' : LONE_SURROGATE.test(text) ? 'a lone surrogate' : undefined;
  const stack: Node[] = [{ value: root, key: undefined, parent: undefined }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (typeof node.value === 'string') {
      const what = problem(node.value);
      if (what) return { path: pathOf(node), what };
      continue;
    }
    if (typeof node.value !== 'object' || node.value === null) continue;
    for (const [key, child] of Object.entries(node.value)) {
      const what = problem(key);
      // The key itself is refused: it is named by its printable part (the path must not echo the NUL).
      if (what) return { path: pathOf({ value: child, key: JSON.stringify(key).slice(1, -1), parent: node }), what };
      stack.push({ value: child, key, parent: node });
    }
  }
  return undefined;
}

/**
 * The path of the first `__proto__` key, or `constructor` holding `prototype`, anywhere in the value.
 * Iterative: a 64 KiB body can nest deeper than the call stack.
 */
export function forbiddenKeyPath(root: unknown): string | undefined {
  // Parent links, not copied paths: the path is built only for the key that is refused.
  type Node = { value: unknown; key: string | undefined; parent: Node | undefined };
  const pathOf = (node: Node | undefined, tail: string[]): string => {
    const keys = [...tail];
    for (let at = node; at?.key !== undefined; at = at.parent) keys.unshift(at.key);
    return keys.join('.');
  };
  const stack: Node[] = [{ value: root, key: undefined, parent: undefined }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (typeof node.value !== 'object' || node.value === null) continue;
    for (const [key, child] of Object.entries(node.value)) {
      if (key === '__proto__') return pathOf(node, [key]);
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'))
        return pathOf(node, [key, 'prototype']);
      stack.push({ value: child, key, parent: node });
    }
  }
  return undefined;
}

/**
 * The same refusal for path parameters and query values (a `%00` in an id reached Postgres: a 500). Runs after the
 * access check (an unauthenticated caller learns nothing new) and before any handler.
 */
export function installParameterTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    for (const [where, values] of [
      ['path', request.params],
      ['query', request.query],
    ] as const) {
      const unstorable = unstorableTextPath(values);
      if (unstorable === undefined) continue;
      const field = unstorable.path || where;
      throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, `${field}: must not contain ${unstorable.what}`, {
        fields: [field],
      });
    }
  });
}
