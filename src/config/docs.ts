import { allSettings } from './index.js';
import { AREAS, defaultOf, type Setting } from './helpers.js';

/**
 * The reference of every setting, from the schema: the table of docs/configuration.md (between its
 * `config-table` markers, checked by test/unit/docs-configuration.test.ts) and `tenantctl config`.
 */

/** What a setting is when unset, in Markdown: its default value, else what happens. */
export function defaultText(s: Setting): string {
  const value = defaultOf(s);
  const shown =
    value === undefined || (Array.isArray(value) && value.length === 0) || value === ''
      ? (s.unset ?? 'unset')
      : `\`${String(value)}\``;
  return s.devStack ? `${shown}; \`npm start\`: ${s.devStack}` : shown;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function configMarkdown(): string {
  const rows = allSettings().map(
    ({ name, area, setting }) =>
      `| \`${name}\` | ${AREAS[area]} | ${cell(defaultText(setting))} | ${setting.advanced ? 'yes' : 'no'} | ` +
      `${cell(setting.description)}${setting.secret ? ' Secret: never printed.' : ''} |`,
  );
  return ['| variable | area | default | advanced | description |', '|---|---|---|---|---|', ...rows].join('\n');
}

export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

/** The page with its generated table replaced by the schema's (the prose around it kept). */
export function withConfigTable(page: string): string {
  const start = page.indexOf(TABLE_START);
  const end = page.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`the page has no ${TABLE_START} … ${TABLE_END} markers`);
  return `${page.slice(0, start + TABLE_START.length)}\n${configMarkdown()}\n${page.slice(end)}`;
}

/** `tenantctl config`: one block per area, each variable with its default; values are never shown. */
export function configListing(): string {
  const lines: string[] = [];
  let area = '';
  for (const entry of allSettings()) {
    if (entry.area !== area) {
      area = entry.area;
      if (lines.length) lines.push('');
      lines.push(`${AREAS[entry.area]}:`);
    }
    const plain = (text: string) => text.replace(/`/g, '');
    const flags = [entry.setting.advanced ? 'advanced' : '', entry.setting.secret ? 'secret' : '']
      .filter(Boolean)
      .join(', ');
    lines.push(
      `  ${entry.name}${flags ? ` (${flags})` : ''}`,
      `      ${plain(entry.setting.description)}`,
      `      default: ${plain(defaultText(entry.setting))}`,
    );
  }
  return lines.join('\n');
}
