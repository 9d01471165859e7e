/**
 * Parses an HTTP `Retry-After` value (RFC 9110: delay-seconds or an HTTP-date) into milliseconds from `now`.
 * Returns undefined when absent or unreadable, so callers fall back to their own backoff instead of guessing.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) {
    return Math.ceil(Number(text) * 1000);
  }
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  // A date in the past means "now"; never hand back a negative delay.
  return Math.max(0, at - now);
}
