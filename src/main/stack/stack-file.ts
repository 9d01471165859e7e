import { join } from 'node:path';

/**
 * The dev stack (`npm start`) writes the addresses it started into DATA_DIR/stack.json, so that
 * `npx tenantctl ...` in another terminal talks to it with no environment set. Real environment
 * variables always win.
 */
export function stackFile(dataDir: string): string {
  return join(dataDir, 'stack.json');
}
