import { isObject, type JsonObject } from './envelope.js';

/**
 * Last-use information of a key record is "not shown" by the contract, and a revoke decided on a misread of it cuts
 * off a consumer that still uses the key. So the reading is explicit, never `undefined`:
 * - `seen`: the platform shows a last use at `at`;
 * - `never`: the platform shows a last-use field (or a zero use counter) that says "never used";
 * - `unknown`: we cannot tell. `not_shown` when the record carries nothing that could be last use (callers fall back
 *   visibly, e.g. the rotation's overlap window); `unrecognised` when it carries fields that could be last use but that
 *   we cannot read (`candidates` names them), which callers must treat as "maybe in use", never as "no use".
 *
 * A field is last use when its name says so (`lastUsedAt`, `last_used_at`, `lastUsed`, `last_seen`, `lastAccessedAt`,
 * …) at the top level or nested one or two levels (`usage.lastUsedAt`), or when it is the time inside an object whose
 * name says so (`lastUsed.at`, `last_use.timestamp`). A use counter (`usage.requestCount`, `use_count`, …) is kept.
 */
export type LastUse =
  | { state: 'seen'; at: string; field: string }
  | { state: 'never'; field: string }
  | { state: 'unknown'; reason: 'not_shown' | 'unrecognised'; candidates: string[] };

export interface KeyUseInfo {
  lastUse: LastUse;
  /** How many times the key was used, when the platform shows a counter. */
  useCount: number | undefined;
}

const MAX_DEPTH = 3; // the record itself, then nested one or two levels

/** `last_used_at`, `lastUsedAt`, `LastUsed-At` all become `lastusedat`. */
function fold(name: string): string {
  return name.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
}

/** `^(a|b)(c|d)?$` from word lists: long alternations stay readable. */
const anyOf = (words: readonly string[]) => `(${words.join('|')})`;

const LAST_USE_NAME = new RegExp(
  `^${anyOf(['last', 'latest', 'most ?recent'])}` +
    anyOf(
      ['used', 'use', 'usage', 'seen', 'access', 'accessed', 'activity', 'active', 'request', 'requested'].concat([
        'call',
        'called',
        'auth',
        'authenticated',
      ]),
    ) +
    `${anyOf(['at', 'on', 'time', 'timestamp', 'date', 'ts'])}?$`,
);
const TIME_IN_OBJECT = new Set(['at', 'time', 'timestamp', 'ts', 'date', 'when', 'value', 'iso']);
const USE_CONTAINER = /^(usage|use|uses|activity|stats|statistics|metrics|telemetry|lastuse|lastused|lastusage)$/;
const COUNTER_NAME = new RegExp(
  `^${anyOf(['use', 'usage', 'request', 'requests', 'call', 'calls', 'auth', 'authentication'])}` +
    `${anyOf(['count', 'total', 'counter'])}$|` +
    `^${anyOf(
      [...['usecount', 'requestcount', 'totalrequests', 'totaluses'], ...['count', 'total', 'requests']].concat([
        'calls',
        'uses',
      ]),
    )}$`,
);
// Timestamps that describe the record's own life, not its use.
const LIFE_TIMES = new RegExp(
  `^${anyOf([
    ...['created', 'updated', 'modified', 'revoked', 'expires', 'expiry', 'expired', 'rotated', 'issued', 'deleted'],
    ...['disabled', 'enabled', 'activated', 'deactivated', 'suspended', 'closed', 'completed', 'validfrom'],
    ...['validuntil', 'validto', 'notbefore', 'notafter', 'lastrotated', 'lastmodified', 'lastupdated'],
  ])}${anyOf(['at', 'on', 'time', 'timestamp', 'date'])}?$`,
);
const ISO_LIKE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/;

type Reading = { kind: 'time'; at: string } | { kind: 'null' } | { kind: 'unreadable' };

function readTime(value: unknown): Reading {
  if (value === null) return { kind: 'null' };
  if (typeof value === 'string' && !Number.isNaN(Date.parse(value)))
    return { kind: 'time', at: new Date(Date.parse(value)).toISOString() };
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) {
    // Epoch seconds or milliseconds.
    return { kind: 'time', at: new Date(value < 1e11 ? value * 1000 : value).toISOString() };
  }
  return { kind: 'unreadable' };
}

interface Found {
  times: Array<{ field: string; reading: Reading }>;
  counters: Array<{ field: string; count: number }>;
  candidates: string[];
}

function looksLikeTime(value: unknown): boolean {
  return typeof value === 'string' && ISO_LIKE.test(value);
}

function walk(obj: JsonObject, path: string[], depth: number, inContainer: boolean, found: Found): void {
  for (const [name, value] of Object.entries(obj)) {
    const folded = fold(name);
    const field = [...path, name].join('.');
    if (LAST_USE_NAME.test(folded)) {
      if (isObject(value)) {
        // `lastUsed: { at }`: the time inside; an object without one could still be last use.
        const inner = Object.entries(value).find(([innerName]) => TIME_IN_OBJECT.has(fold(innerName)));
        if (inner) found.times.push({ field: `${field}.${inner[0]}`, reading: readTime(inner[1]) });
        else found.candidates.push(field);
        continue;
      }
      found.times.push({ field, reading: readTime(value) });
      continue;
    }
    // A bare `count` or `total` is a use counter only inside a usage object.
    if (
      COUNTER_NAME.test(folded) &&
      typeof value === 'number' &&
      Number.isInteger(value) &&
      value >= 0 &&
      (inContainer || !/^(count|total|requests|calls|uses)$/.test(folded))
    ) {
      found.counters.push({ field, count: value });
      continue;
    }
    if (isObject(value)) {
      if (depth + 1 < MAX_DEPTH) {
        const before = found.times.length + found.counters.length + found.candidates.length;
        walk(value, [...path, name], depth + 1, USE_CONTAINER.test(folded), found);
        // A use-like container we read nothing from (`usage: { p95: … }`) could still be last use.
        if (
          USE_CONTAINER.test(folded) &&
          found.times.length + found.counters.length + found.candidates.length === before
        )
          found.candidates.push(field);
      } else if (USE_CONTAINER.test(folded)) {
        found.candidates.push(field);
      }
      continue;
    }
    // An unknown timestamp (not the record's own life) could be a last use under a name we do not know.
    if (looksLikeTime(value) && !LIFE_TIMES.test(folded)) found.candidates.push(field);
  }
}

/** Reads last-use information from one key record (see LastUse). Never throws. */
export function readKeyUse(record: JsonObject): KeyUseInfo {
  const found: Found = { times: [], counters: [], candidates: [] };
  walk(record, [], 0, false, found);
  const useCount = found.counters[0]?.count;
  // The top-most recognised field wins (`lastUsedAt` over `usage.lastUsedAt` when both are shown).
  const times = [...found.times].sort((a, b) => a.field.split('.').length - b.field.split('.').length);
  const readable = times.filter((t) => t.reading.kind !== 'unreadable');
  const seen = readable.find((t) => t.reading.kind === 'time');
  if (seen && seen.reading.kind === 'time') {
    // Several readable times: the latest counts, so a use is never hidden by a stale field.
    const latest = readable
      .flatMap((t) => (t.reading.kind === 'time' ? [{ field: t.field, at: t.reading.at }] : []))
      .reduce((a, b) => (Date.parse(b.at) > Date.parse(a.at) ? b : a));
    return { lastUse: { state: 'seen', at: latest.at, field: latest.field }, useCount };
  }
  const unreadable = times.filter((t) => t.reading.kind === 'unreadable').map((t) => t.field);
  const shownNull = readable.find((t) => t.reading.kind === 'null');
  if (shownNull && unreadable.length === 0) {
    // `lastUsedAt: null` with a positive counter contradicts itself: we cannot tell.
    if (useCount !== undefined && useCount > 0) {
      return {
        lastUse: { state: 'unknown', reason: 'unrecognised', candidates: [shownNull.field, found.counters[0]!.field] },
        useCount,
      };
    }
    return { lastUse: { state: 'never', field: shownNull.field }, useCount };
  }
  if (unreadable.length === 0 && times.length === 0 && useCount === 0 && found.candidates.length === 0) {
    return { lastUse: { state: 'never', field: found.counters[0]!.field }, useCount };
  }
  const candidates = [
    ...unreadable,
    ...found.candidates,
    ...(useCount !== undefined && useCount > 0 ? [found.counters[0]!.field] : []),
  ];
  if (candidates.length > 0) return { lastUse: { state: 'unknown', reason: 'unrecognised', candidates }, useCount };
  return { lastUse: { state: 'unknown', reason: 'not_shown', candidates: [] }, useCount };
}

/** Whether last use moved between two readings of the same key: any later use, or anything we can no longer tell. */
export function lastUseMoved(before: LastUse, after: LastUse, countBefore?: number, countAfter?: number): boolean {
  if (countBefore !== undefined && countAfter !== undefined && countAfter > countBefore) return true;
  if (after.state === 'unknown') return before.state !== 'unknown' || after.reason !== before.reason;
  if (after.state === 'never') return before.state === 'seen';
  if (before.state !== 'seen') return true;
  return Date.parse(after.at) > Date.parse(before.at);
}
