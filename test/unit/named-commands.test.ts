import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';

/**
 * Issue 45, stale words: a wait text, a hint or a runbook line names `tenantctl ...` for an operator to
 * type, and the operator types it. Every command they name is collected here (by regex, from the workflow
 * and activity sources, the domain's wait texts and docs/operations.md) and run with `--help` through the
 * real CLI: it must exist, and so must every flag the text gives it (`--operator <you>` outlived its flag).
 */
const root = join(import.meta.dirname, '..', '..');

/** Where wait texts, hints and runbook lines are written. */
const SOURCE_DIRS = ['workflows', 'activities', 'src/domain'];
const RUNBOOKS = ['docs/operations.md'];

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/**
 * A TypeScript file's strings as an operator reads them: comments left out (they are no wait text),
 * literals joined across `' +\n '`, every `${...}` a placeholder word, escaped backticks plain.
 */
function stringsOf(source: string): string {
  const code = source
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
  let text = code.replace(/[`'"]\s*\+\s*\(?\s*[`'"]/g, '');
  for (let previous = ''; previous !== text;) {
    previous = text;
    text = text.replace(/\$\{[^{}]*\}/g, 'X');
  }
  return text.replace(/\\`/g, '`');
}

/** A Markdown page's code: each line of a fenced block (without its comment), and each inline code span. */
function codeOf(markdown: string): string[] {
  const fenced: string[] = [];
  const prose = markdown.replace(/^```[^\n]*\n([\s\S]*?)^```/gm, (_block, body: string) => {
    fenced.push(...body.split('\n').map((line) => line.replace(/\s#.*$/, '')));
    return '';
  });
  const spans = [...prose.matchAll(/`([^`]+)`/g)].map((match) => match[1]!.replace(/\s*\n\s*/g, ' '));
  return [...fenced, ...spans];
}

interface Named {
  /** The command's words and positional arguments, as typed (`rotation revoke-anyway X`). */
  words: string[];
  flags: string[];
  where: string;
}

/** Each `tenantctl ...` in `text`, up to the end of its code span, sentence or clause. */
function commandsIn(text: string, where: string): Named[] {
  const named: Named[] = [];
  for (const match of text.matchAll(/\btenantctl[ \t]+([^`'\n;,)#]*)/g)) {
    const tokens = match[1]!.replace(/\s<\s.*$/, '').match(/"[^"]*"|\S+/g) ?? [];
    const firstFlag = tokens.findIndex((token) => token.startsWith('-'));
    const words = firstFlag === -1 ? tokens : tokens.slice(0, firstFlag);
    if (words.length === 0 || words[0] === '...') continue;
    const flags = tokens.filter((token) => token.startsWith('--')).map((flag) => flag.replace(/=.*$/, ''));
    // `suspend|resume`, `revoke-anyway|abort|retry-key-create`: each alternative is a command named.
    const alternatives = words.reduce<string[][]>(
      (heads, word) => heads.flatMap((head) => word.split('|').map((choice) => [...head, choice])),
      [[]],
    );
    for (const variant of alternatives) named.push({ words: variant, flags, where });
  }
  return named;
}

function namedCommands(): Named[] {
  const fromSources = SOURCE_DIRS.flatMap(sourcesUnder).flatMap((file) =>
    commandsIn(stringsOf(readFileSync(join(root, file), 'utf8')), file),
  );
  const fromRunbooks = RUNBOOKS.flatMap((file) =>
    codeOf(readFileSync(join(root, file), 'utf8')).flatMap((code) => commandsIn(code, file)),
  );
  return [...fromSources, ...fromRunbooks];
}

/** `--flag` as an option of a command's help (`  --slot <slot>  key slot`, `-h, --help`). */
function helpHasFlag(help: string, flag: string): boolean {
  const escaped = flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^\\s+(?:-\\w, )?${escaped}(?=[\\s,=<\\[]|$)`, 'm').test(help);
}

describe('the commands that wait texts, hints and the runbook name', () => {
  const named = namedCommands();
  const byCommand = new Map<string, Named[]>();
  for (const command of named) {
    const key = command.words.join(' ');
    byCommand.set(key, [...(byCommand.get(key) ?? []), command]);
  }

  it('finds the commands it is to check', () => {
    // The extraction itself: a regex that silently matched nothing would pass everything below.
    expect(byCommand.size).toBeGreaterThan(30);
    expect(named.some((c) => c.where.startsWith('workflows/') && c.words[0] === 'resolve-transfer')).toBe(true);
    expect(named.some((c) => c.where === 'docs/operations.md' && c.words[0] === 'parent-funded')).toBe(true);
  });

  it('each exists (`--help` exits 0) and takes every flag the text gives it', { timeout: 300_000 }, async () => {
    const problems: string[] = [];
    const entries = [...byCommand.entries()];
    // A few at a time: each is a process (the machine is shared).
    for (let i = 0; i < entries.length; i += 4) {
      await Promise.all(
        entries.slice(i, i + 4).map(async ([command, uses]) => {
          const run = await runCli([...uses[0]!.words, '--help']);
          const where = [...new Set(uses.map((u) => u.where))].join(', ');
          if (run.code !== 0) {
            problems.push(`tenantctl ${command} (${where}): --help exited ${run.code}: ${run.stderr.trim()}`);
            return;
          }
          // An unknown name gets its parent's help (exit 0): the help must be the named command's own.
          const usage = /^Usage: tenantctl (.*)$/m.exec(run.stdout)?.[1] ?? '';
          const path = usage.split(' ').filter((token, i, all) => all.slice(0, i + 1).every((t) => /^[a-z]/.test(t)));
          const runnable = path.length > 0 && !usage.includes('[command]');
          if (!runnable || path.some((word, i) => word !== uses[0]!.words[i])) {
            problems.push(`tenantctl ${command} (${where}): no such command (its help is \`tenantctl ${usage}\`)`);
            return;
          }
          for (const use of uses)
            for (const flag of use.flags)
              if (!helpHasFlag(run.stdout, flag)) problems.push(`tenantctl ${command} (${use.where}): no flag ${flag}`);
        }),
      );
    }
    expect([...new Set(problems)].sort()).toEqual([]);
  });
});
