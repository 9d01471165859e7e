import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerRotationCommands } from '../../src/cli/commands/rotation.js';
import { DEFAULT_TIMINGS } from '../../src/domain/rotation-defaults.js';

/**
 * Each default is written once (issue 32): the CLI's help text quotes the constant the code and the schema read,
 * never a copy of its value, so the help cannot drift from what a run really does when a flag is left out.
 */
const root = join(import.meta.dirname, '..', '..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

describe("the CLI's help text and the defaults", () => {
  it('rotate-key --help states the rotation timings that a rotation without the flags uses', () => {
    const program = new Command();
    registerRotationCommands(program);
    const help = program.commands.find((command) => command.name() === 'rotate-key')!.helpInformation();
    for (const [flag, value] of [
      ['--quiet-period', DEFAULT_TIMINGS.quietPeriod],
      ['--propagation-allowance', DEFAULT_TIMINGS.propagationAllowance],
      ['--poll-interval', DEFAULT_TIMINGS.pollInterval],
      ['--quiet-deadline', DEFAULT_TIMINGS.quietDeadline],
      ['--overlap-window', DEFAULT_TIMINGS.overlapWindow],
    ] as const) {
      const line = help.slice(help.indexOf(flag), help.indexOf('\n  --', help.indexOf(flag) + 1));
      expect(line.replace(/\s+/g, ' '), flag).toContain(`(default ${value})`);
    }
  });

  it('writes no default value of its own into a help string: each is read from its constant', () => {
    // `(default 1h)`, `(default: 30)`: a literal value after "default" in the CLI's sources is a second copy.
    const copies = sourcesUnder('src/cli').flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .map((line, index) => ({ line, at: `${file}:${index + 1}` }))
        .filter(({ line }) => /\(default:? [0-9]/.test(line))
        .map(({ line, at }) => `${at}: ${line.trim()}`),
    );
    expect(copies).toEqual([]);
  });
});
