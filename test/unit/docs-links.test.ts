import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { Lexer, marked, type Token, type Tokens } from 'marked';
import { describe, expect, it } from 'vitest';

/**
 * The README and the docs/ book as a reader meets them, read by a Markdown parser (marked, GitHub-flavoured):
 * every link inside the repository leads to a file, and to a heading of it when it names one; every table is a
 * table (a blank line or a bad separator row inside one turns the rest of it into a paragraph of pipes).
 */
const root = join(import.meta.dirname, '..', '..');
const pages = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

function tokensOf(markdown: string): Token[] {
  return new Lexer({ gfm: true }).lex(markdown);
}

function each(tokens: Token[], visit: (token: Token) => void): void {
  void marked.walkTokens(tokens, visit); // a synchronous walk: no async extension is registered
}

/** The text a heading shows, markup dropped (`` `npm start` `` shows as npm start). */
function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((token) => ('tokens' in token && token.tokens ? plainText(token.tokens) : 'text' in token ? token.text : ''))
    .join('');
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  each(tokensOf(markdown), (token) => {
    if (token.type !== 'heading') return;
    const text = plainText((token as Tokens.Heading).tokens)
      .replace(/&#39;/g, "'")
      .replace(/&quot;/g, '"')
      .replace(/&amp;/g, '&');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  });
  return anchors;
}

/** Every link target the parser finds on a page (links and images, inside tables and lists too). */
function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  each(tokensOf(markdown), (token) => {
    if (token.type === 'link' || token.type === 'image') targets.push((token as Tokens.Link).href);
  });
  return targets;
}

/** Links of a page that lead nowhere: a missing file, or an anchor that names no heading of the file. */
function brokenLinks(page: string, markdown: string, readPage: (path: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const href of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto: … : outside the repository
    const [path = '', anchor] = href.split('#', 2);
    const target = path === '' ? page : join(dirname(page), decodeURIComponent(path));
    const text = path === '' ? markdown : readPage(target);
    if (text === undefined) {
      problems.push(`${page}: ${href}: no file ${target}`);
      continue;
    }
    if (anchor !== undefined && target.endsWith('.md') && !headingAnchors(text).has(anchor)) {
      problems.push(`${page}: ${href}: ${target} has no heading #${anchor}`);
    }
  }
  return problems;
}

/** The cells of a table row, split at pipes that are not escaped (`\|` is a pipe inside a cell). */
function cells(line: string): string[] {
  const inner = line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

const rowShaped = /^\s*\|.*\|\s*$/;

/** Tables that do not render as written: cut apart, a bad separator row, or a row with another number of cells. */
function brokenTables(page: string, markdown: string): string[] {
  const problems: string[] = [];
  each(tokensOf(markdown), (token) => {
    if (token.type === 'paragraph') {
      const stray = token.raw.split('\n').find((line) => rowShaped.test(line));
      if (stray !== undefined) {
        problems.push(`${page}: a table row outside any table (a blank line cut it?): ${stray.slice(0, 80)}`);
      }
    }
    if (token.type !== 'table') return;
    const lines = token.raw.split('\n').filter((line) => line.trim() !== '');
    const [header = '', separator = '', ...rows] = lines;
    const width = cells(header).length;
    if (!cells(separator).every((cell) => /^:?-+:?$/.test(cell)) || cells(separator).length !== width) {
      problems.push(`${page}: table "${header.slice(0, 60)}": separator row ${separator} does not match the header`);
    }
    for (const row of rows) {
      if (cells(row).length !== width) {
        problems.push(
          `${page}: table "${header.slice(0, 60)}": ${cells(row).length} cells, header has ${width}: ${row}`,
        );
      }
    }
  });
  return problems;
}

function readRepoPage(path: string): string | undefined {
  const full = join(root, path);
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? '' : readFileSync(full, 'utf8');
}

describe('the README and docs/', () => {
  it('keeps the README short: 200 lines at most', () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines).toBeLessThanOrEqual(200);
  });

  it.each(pages)('%s: every link inside the repository resolves, anchors included', (page) => {
    expect(brokenLinks(page, readFileSync(join(root, page), 'utf8'), readRepoPage)).toEqual([]);
  });

  it.each(pages)('%s: every table is well-formed', (page) => {
    expect(brokenTables(page, readFileSync(join(root, page), 'utf8'))).toEqual([]);
  });

  it('links every page of docs/ from the README', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const linked = new Set(linkTargets(readme).map((href) => href.split('#')[0]));
    const unlinked = pages.filter((page) => page !== 'README.md' && !linked.has(page));
    expect(unlinked, `pages no one can find from ${relative(root, join(root, 'README.md'))}`).toEqual([]);
  });
});

describe('the checks themselves', () => {
  it('finds a table cut by a blank line, the damage the old README had', () => {
    const cut = '| a | b |\n|---|---|\n| 1 | 2 |\n\n| 3 | 4 |\n| 5 | 6 |\n';
    expect(brokenTables('x.md', cut)).toEqual([expect.stringMatching(/a table row outside any table.*\| 3 \| 4 \|/)]);
  });

  it('finds a separator row that does not match its header: the parser then sees no table at all', () => {
    const table = '| a | b |\n|---|---|---|\n| 1 | 2 |\n';
    expect(brokenTables('x.md', table)).toEqual([expect.stringMatching(/a table row outside any table.*\| a \| b \|/)]);
  });

  it('finds a row with another number of cells, and counts an escaped pipe as text', () => {
    const table = '| a | b |\n|---|---|\n| 1 | 2 | 3 |\n| `x\\|y` | 4 |\n';
    expect(brokenTables('x.md', table)).toEqual([expect.stringMatching(/3 cells, header has 2: \| 1 \| 2 \| 3 \|/)]);
  });

  it('finds a link to a missing file and one to a missing heading, and takes GitHub anchors', () => {
    const files: Record<string, string> = {
      'docs/b.md': "# B\n\n## The parent's own key: `npm run cluster`\n\n## Twice\n\n## Twice\n",
    };
    const page =
      '[ok](b.md#the-parents-own-key-npm-run-cluster) [ok2](b.md#twice-1) [self](#top) [web](https://example.com/x)\n' +
      '[gone](c.md) [no heading](b.md#nowhere)\n\n# Top\n';
    expect(brokenLinks('docs/a.md', page, (path) => files[path])).toEqual([
      'docs/a.md: c.md: no file docs/c.md',
      'docs/a.md: b.md#nowhere: docs/b.md has no heading #nowhere',
    ]);
  });
});
