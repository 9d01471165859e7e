import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('product code keeps Prettier’s width (issue 46)', () => {
  it('has no line over 120 characters in src/, activities/ or workflows/', () => {
    const long = ['src', 'activities', 'workflows'].flatMap((dir) =>
      sourcesUnder(dir).flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, index) => (line.length > 120 ? [`${file.slice(root.length + 1)}:${index + 1}`] : [])),
      ),
    );
    expect(long).toEqual([]);
  });
});
