import { existsSync, readFileSync } from 'node:fs';
import { TABLE_END, TABLE_START, withConfigTable } from '../config/docs.js';
import { projectPath } from '../infra/project-root.js';

/**
 * docs/configuration.md as `tenantctl config --markdown` prints it: the committed page's prose with the
 * schema's table (outside a checkout, the table under a heading).
 */
export function configPage(): string {
  const file = projectPath('docs', 'configuration.md');
  const page = existsSync(file) ? readFileSync(file, 'utf8') : `# Configuration\n\n${TABLE_START}\n${TABLE_END}\n`;
  return withConfigTable(page).trimEnd();
}
