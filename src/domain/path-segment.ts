/**
 * Ids that become a segment of a platform URL (project, sub-account, key, webhook ids). The contract calls them
 * opaque and we never parse them, but a few values are not ids at all: `.` and `..` (and their percent-encoded
 * spellings) are resolved away by URL parsers and proxies, and a separator or `%` turns one segment into another
 * path. They are refused before any call: in the input schemas, and in the platform client's path builder as the
 * last line of defence. Pure (no zod): the platform client imports it.
 */
const PATH_SEGMENT_RULE =
  'an id: printable characters without white space or / \\ % ? # ; and not made of dots only (. or ..)';

// Separators and the characters that start an escape, a query, a fragment or a matrix parameter (`..;/`).
const UNSAFE = /[/\\%?#;\s\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

/** The problem with a value used as a URL path segment (`must ...`), or undefined. */
export function pathSegmentProblem(value: string): string | undefined {
  if (value === '') return 'must not be empty';
  if (/^\.+$/.test(value)) return `must be ${PATH_SEGMENT_RULE} (dots alone are a relative path)`;
  if (UNSAFE.test(value)) return `must be ${PATH_SEGMENT_RULE}`;
  return undefined;
}
