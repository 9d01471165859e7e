/**
 * The one way tenantctl writes to the terminal. Much of what a command prints it did not write itself:
 * ids, names and messages from a file, the platform, the gateway or another operator. Any of them may
 * carry characters a terminal acts on (ESC sequences that set the title or clear the screen, BEL, a C1
 * CSI) or that change how the text reads (bidi overrides, zero-width characters), so everything is
 * written through here with them escaped (`\x1b`, `\u202e`). A line is one line: a newline inside a
 * value is escaped too, so it cannot forge a row; only a block the command lays out itself (JSON, a
 * generated page) keeps its newlines. Nothing else in src/cli writes to stdout or stderr (a lint rule).
 */

/** Controls (C0, DEL, C1), format characters (bidi, zero-width, BOM, ...) and the line/paragraph separators. */
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const UNSAFE_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\u2028\u2029]/gu;
/** What JSON.stringify leaves raw inside strings: DEL, C1, format characters and the separators. */
const UNSAFE_IN_JSON = /[\u007f-\u009f\p{Cf}\u2028\u2029]/gu;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

function escapeChar(char: string): string {
  const code = char.codePointAt(0)!;
  if (NAMED[char]) return NAMED[char];
  if (code <= 0xff) return `\\x${hex(code, 2)}`;
  return code <= 0xffff ? `\\u${hex(code, 4)}` : `\\u{${hex(code, 1)}}`;
}

/** A value as one line of terminal-safe text: every control and format character escaped, newlines too. */
export function terminalSafe(value: string): string {
  return value.replace(UNSAFE, escapeChar);
}

/** Text the command laid out over several lines: the same, but its newlines are kept. */
export function terminalSafeBlock(text: string): string {
  return text.replace(UNSAFE_BUT_NEWLINE, escapeChar);
}

/**
 * JSON that is still the same JSON, safe in a terminal: the characters JSON.stringify leaves raw are written
 * as `\uXXXX` escapes (a character outside the BMP as its surrogate pair), which JSON reads back unchanged.
 */
export function terminalSafeJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? 'null').replace(UNSAFE_IN_JSON, (char) =>
    [...Array(char.length).keys()].map((i) => `\\u${hex(char.charCodeAt(i), 4)}`).join(''),
  );
}

/** One line on stdout. */
export function printLine(line: string): void {
  process.stdout.write(`${terminalSafe(line)}\n`);
}

/** A block the command laid out itself on stdout: its newlines are kept. */
export function printBlock(text: string): void {
  process.stdout.write(`${terminalSafeBlock(text)}\n`);
}

/** A value as JSON on stdout (`--json`). */
export function printJson(value: unknown): void {
  process.stdout.write(`${terminalSafeJson(value)}\n`);
}

/** One line on stderr: errors, warnings and wait lines (stdout stays the answer). */
export function printErrorLine(line: string): void {
  process.stderr.write(`${terminalSafe(line)}\n`);
}

/** A block on stderr, newlines kept: a stack trace under TENANTCTL_DEBUG. */
export function printErrorBlock(text: string): void {
  process.stderr.write(`${terminalSafeBlock(text)}\n`);
}
