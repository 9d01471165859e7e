import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configPage } from '../../src/cli/config-page.js';
import { configMarkdown, TABLE_END, TABLE_START } from '../../src/config/docs.js';
import { allSettings, configSchema } from '../../src/config/index.js';
import { runCli } from '../harness/cli.js';

const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');

describe('docs/configuration.md', () => {
  it('holds the table exactly as the schema generates it (regenerate: npx tenantctl config --markdown)', () => {
    const table = new RegExp(`${TABLE_START}\\n([\\s\\S]*?)\\n${TABLE_END}`).exec(page)?.[1];
    expect(table).toBe(configMarkdown());
    expect(configPage()).toBe(page.trimEnd());
  });

  it('lists every variable of the schema once, with its area, default, whether advanced, and description', () => {
    const rows = configMarkdown().split('\n').slice(2);
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)` \|/.exec(row)?.[1])).toEqual(Object.keys(configSchema.shape));
    for (const row of rows) {
      const cells = row.split(/(?<!\\)\|/).slice(1, -1);
      expect(cells, row).toHaveLength(5);
      for (const cell of cells) expect(cell.trim(), row).not.toBe('');
      expect(['yes', 'no'], row).toContain(cells[3]!.trim());
    }
    for (const { name, setting } of allSettings()) expect(setting.description.length, name).toBeGreaterThan(10);
  });

  it('is what `tenantctl config --markdown` prints, with no gateway, database or configuration', async () => {
    const result = await runCli(['config', '--markdown']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(page);
  }, 60_000);
});
