import { inspect } from 'node:util';

// The platform's credential prefixes (contract, "Authentication"). Longest first so `svsk_`/`svpk_` win over `sv_`.
export const TOKEN_PREFIXES = ['svsk_', 'svpk_', 'sv_'] as const;
export type TokenPrefix = (typeof TOKEN_PREFIXES)[number];

function prefixOf(value: string): TokenPrefix | undefined {
  return TOKEN_PREFIXES.find((prefix) => value.startsWith(prefix));
}

function maskFor(value: string): string {
  const prefix = prefixOf(value);
  return prefix ? `[redacted ${prefix}…]` : '[redacted]';
}

/**
 * A credential that cannot leak by accident: string conversion, JSON serialisation (logs, Temporal payloads) and
 * `util.inspect` (console, pino's fallback, vitest diffs) all show only the prefix. The value lives in a private
 * field, so spreading or `Object.keys` cannot reach it either; `reveal()` is the one deliberate way out.
 */
export class SecretToken {
  readonly #value: string;

  constructor(value: string) {
    if (typeof value !== 'string' || value.length === 0) {
      throw new TypeError('SecretToken needs a non-empty string');
    }
    this.#value = value;
  }

  static from(value: SecretToken | string): SecretToken {
    return value instanceof SecretToken ? value : new SecretToken(value);
  }

  /** The credential prefix (`svsk_`, `svpk_`, `sv_`), or undefined for an unrecognised token. */
  get prefix(): TokenPrefix | undefined {
    return prefixOf(this.#value);
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return maskFor(this.#value);
  }

  toJSON(): string {
    return maskFor(this.#value);
  }

  [inspect.custom](): string {
    return maskFor(this.#value);
  }
}

// A token runs until whitespace, a quote or a separator that commonly follows one in JSON, headers and query strings.
const TOKEN_PATTERN = /(?<![A-Za-z0-9])(svsk_|svpk_|sv_)[^\s"'`<>,;&)}\]]+/g;
// Bearer credentials of any shape (a token without a known prefix is still a secret).
const BEARER_PATTERN = /\b(Bearer)\s+[^\s"'`<>,;&)}\]]+/gi;

/** Masks every `svsk_`/`svpk_`/`sv_` token and every bearer credential in free text (error bodies, messages). */
export function redactSecrets(text: string): string {
  return text
    .replace(BEARER_PATTERN, (_match, word: string) => `${word} [redacted]`)
    .replace(TOKEN_PATTERN, (_match, prefix: string) => `[redacted ${prefix}…]`);
}

/** Redacts, flattens whitespace and truncates text that came from the network before it goes into a message. */
export function safeSnippet(text: string, max = 300): string {
  const flat = redactSecrets(text).replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
