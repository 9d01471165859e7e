/**
 * The one rule for free text a person types (reasons, labels, names, descriptions), as a pure function: workflow
 * Update validators run it (no zod in their bundle), and `freeText()` in text.ts wraps it for every zod schema.
 *
 * Why each part: Postgres refuses NUL in text and jsonb, so a NUL accepted at the edge fails every retry of the
 * activity that records it; other control and invisible format characters (bidi overrides, zero-width spaces)
 * make audit lines and names that read differently from what they hold; a lone surrogate cannot be encoded as
 * UTF-8 and would be silently replaced on the way to the database. NFC makes two spellings of one text one value
 * (an "é" typed as one code point or as e + accent), so comparisons (an idempotent top-up's reason) agree.
 */
export interface TextRule {
  /** Longest, in characters (code points, as Postgres' length() counts them), after trimming. */
  max: number;
  /** Shortest after trimming; default 1 (an empty text is refused). 0 allows ''. */
  min?: number;
  /** Line feeds and tabs allowed (a reason may have several lines); otherwise one line. */
  multiline?: boolean;
  /**
   * false: surrounding white space is refused, not trimmed. For names that identify (a tenant's): the run's input as
   * given must equal the checked one, and a name typed with a stray blank is a different name, not a silent fix.
   */
  trim?: boolean;
}

export type TextCheck = { ok: true; value: string } | { ok: false; problem: string };

// Cc (C0, DEL, C1), Cf (format: bidi embeddings/overrides/isolates, marks, zero-width space, BOM, tags...) except
// the zero-width (non-)joiners that emoji and several scripts need, line/paragraph separators, lone surrogates.
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
// Strings, not Sets: workflows bundle this module, and a module-level collection reads as state.
const JOINERS = '\u200c\u200d';
const MULTILINE_ALLOWED = '\n\t';

/** The rule in words, for messages and help. */
export function textRuleText(rule: TextRule): string {
  const min = rule.min ?? 1;
  const length = min > 0 ? `${min}-${rule.max} characters` : `at most ${rule.max} characters`;
  const lines = rule.multiline ? 'line feeds and tabs allowed' : 'one line';
  const trimmed = rule.trim === false ? 'without surrounding white space' : 'after trimming';
  return `${length} ${trimmed}, ${lines}, no control or invisible format characters`;
}

function codePointOf(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** NFC, CRLF as LF, trimmed: what is stored and compared. */
export function normaliseText(value: string, rule: Pick<TextRule, 'multiline' | 'trim'> = {}): string {
  // A lone surrogate survives normalize(); it is refused by checkText, not repaired here.
  const nfc = value.normalize('NFC');
  const lines = rule.multiline ? nfc.replace(/\r\n/g, '\n') : nfc;
  return rule.trim === false ? lines : lines.trim();
}

/** The problem with an already normalised text, as `must ...` (the caller names the field), or undefined. */
export function textProblem(value: string, rule: TextRule): string | undefined {
  for (const char of value) {
    if (!FORBIDDEN.test(char) || JOINERS.includes(char)) continue;
    if (rule.multiline && MULTILINE_ALLOWED.includes(char)) continue;
    const code = codePointOf(char);
    if (/\p{Cs}/u.test(char)) return `must be well-formed Unicode (a lone surrogate ${code} was found)`;
    if (!rule.multiline && (char === '\n' || char === '\t' || char === '\r'))
      return `must be one line: no line breaks or tabs (${code} was found)`;
    if (/[\p{Zl}\p{Zp}]/u.test(char)) return `must not contain line or paragraph separators (${code} was found)`;
    if (/\p{Cc}/u.test(char)) return `must not contain control characters (${code} was found)`;
    return `must not contain invisible format characters such as bidi overrides (${code} was found)`;
  }
  if (rule.trim === false && value.trim() !== value) return 'must not start or end with white space';
  const length = [...value].length;
  const min = rule.min ?? 1;
  if (length === 0 && min > 0) return 'must not be empty';
  if (length < min) return `must be at least ${min} characters after trimming`;
  if (length > rule.max) return `must be at most ${rule.max} characters`;
  return undefined;
}

/** Normalises and checks: the value to store, or the problem (`must ...`). */
export function checkText(value: string, rule: TextRule): TextCheck {
  const normalised = normaliseText(value, rule);
  const problem = textProblem(normalised, rule);
  return problem === undefined ? { ok: true, value: normalised } : { ok: false, problem };
}
