import type { FastifyRequest } from 'fastify';
import type { SimChoices } from './choices.js';
import { validationError } from './errors.js';

/**
 * Shapes a list per the configured list style. Cursors are opaque base64url of the last item's insertion
 * sequence number, so deletions and inserts between pages neither skip nor repeat items.
 */
export function listResponse<T extends { seq: number }>(
  request: FastifyRequest,
  choices: SimChoices,
  records: readonly T[],
  view: (record: T) => unknown,
): unknown {
  const sorted = [...records].sort((a, b) => a.seq - b.seq);
  if (choices.listStyle === 'bare') return sorted.map(view);

  const query = (request.query ?? {}) as Record<string, unknown>;
  const dataPage = choices.listStyle === 'data-page';
  const limitName = dataPage ? 'pageSize' : 'limit';
  const cursorName = dataPage ? 'pageToken' : 'cursor';
  const asked = parseLimit(query[limitName], limitName, choices);
  const limit = choices.ignoreLimit ? choices.defaultPageSize : asked;
  const after = parseCursor(query[cursorName], cursorName);

  const remaining = sorted.filter((record) => record.seq > after);
  const page = remaining.slice(0, limit);
  const last = page.at(-1);
  const next = remaining.length > limit && last ? encodeCursor(last.seq) : null;
  const items = page.map(view);
  return dataPage ? { data: items, page: { nextPageToken: next, pageSize: limit } } : { items, nextCursor: next };
}

function parseLimit(raw: unknown, name: string, choices: SimChoices): number {
  if (raw === undefined || raw === '') return choices.defaultPageSize;
  const text = String(raw);
  const value = /^[1-9][0-9]{0,5}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(value) || value > choices.maxPageSize) {
    throw validationError(name, `must be an integer from 1 to ${choices.maxPageSize}`);
  }
  return value;
}

function encodeCursor(seq: number): string {
  return Buffer.from(`seq:${seq}`, 'utf8').toString('base64url');
}

function parseCursor(raw: unknown, name: string): number {
  if (raw === undefined || raw === '') return 0;
  const decoded = Buffer.from(String(raw), 'base64url').toString('utf8');
  const match = /^seq:([0-9]{1,15})$/.exec(decoded);
  if (!match?.[1]) throw validationError(name, 'is not a cursor returned by this list');
  return Number(match[1]);
}
