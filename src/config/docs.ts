import { allSettings, AREA_SETTINGS, STACK_AREA_SETTINGS } from './index.js';
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

/** The reference table: the product's settings, or (`stack`) those of the dev stack, the cluster and development. */
export function configMarkdown(scope: 'product' | 'stack' = 'product'): string {
  const rows = allSettings(scope === 'stack' ? STACK_AREA_SETTINGS : AREA_SETTINGS).map(
    ({ name, area, setting }) =>
      `| \`${name}\` | ${AREAS[area]} | ${cell(defaultText(setting))} | ${setting.advanced ? 'yes' : 'no'} | ` +
      `${cell(setting.description)}${setting.secret ? ' Secret: never printed.' : ''} |`,
  );
  return ['| variable | area | default | advanced | description |', '|---|---|---|---|---|', ...rows].join('\n');
}

export const TABLE_START = '<!-- config-table:start -->';
export const TABLE_END = '<!-- config-table:end -->';

export const STACK_TABLE_START = '<!-- stack-table:start -->';
export const STACK_TABLE_END = '<!-- stack-table:end -->';

/** The page with its generated table replaced by the schema's (the prose around it kept). */
export function withConfigTable(page: string, scope: 'product' | 'stack' = 'product'): string {
  const [startMark, endMark] = scope === 'stack' ? [STACK_TABLE_START, STACK_TABLE_END] : [TABLE_START, TABLE_END];
  const start = page.indexOf(startMark);
  const end = page.indexOf(endMark);
  if (start < 0 || end < start) throw new Error(`the page has no ${startMark} … ${endMark} markers`);
  return `${page.slice(0, start + startMark.length)}\n${configMarkdown(scope)}\n${page.slice(end)}`;
}

/** `tenantctl config`: one block per area, each variable with its default; values are never shown. */
export function configListing(): string {
  const lines: string[] = [];
  let area = '';
  for (const entry of allSettings([...AREA_SETTINGS, ...STACK_AREA_SETTINGS])) {
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
