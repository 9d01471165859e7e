import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const page = readFileSync(new URL('docs/architecture.md', root), 'utf8');

describe('docs/architecture.md, areas', () => {
  it('names only files and folders that exist in its areas table', () => {
    const table = /\| area \| edge[^\n]*\n\|[-|]+\|\n((?:\|[^\n]*\n)+)/.exec(page)?.[1] ?? '';
    const paths = [...table.matchAll(/`((?:src|activities|workflows)\/[^`]*)`/g)].map((match) => match[1]!);
    expect(paths.length).toBeGreaterThan(40);
    expect(paths.filter((path) => !existsSync(new URL(path, root)))).toEqual([]);
  });
});
