import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROLE_SUMMARIES, ROLES, rolesMarkdown } from '../../src/domain/roles.js';

const root = join(import.meta.dirname, '..', '..');
const page = readFileSync(join(root, 'docs', 'security.md'), 'utf8');

describe('docs/security.md', () => {
  it('holds the roles table exactly as the code generates it', () => {
    const table = /<!-- roles-table:start -->\n([\s\S]*?)\n<!-- roles-table:end -->/.exec(page)?.[1];
    expect(table).toBe(rolesMarkdown());
  });

  it('describes every role as the code does', () => {
    for (const role of ROLES) expect(page).toContain(`| \`${role}\` | ${ROLE_SUMMARIES[role]} |`);
  });

  it('names only files that exist in its threat model and boundary', () => {
    const paths = [...page.matchAll(/`((?:src|test|activities|workflows)\/[^`]+)`/g)].map((match) => match[1]!);
    expect(paths.length).toBeGreaterThan(5);
    for (const path of paths) expect(existsSync(join(root, path)), path).toBe(true);
  });
});
