import type { Pool } from '../src/db/pool.js';

/** Dependencies every activity factory receives; built once per worker process. */
export interface ActivityDeps {
  pool: Pool;
}

/** All activities, registered on the worker; workflows type them with `import type`. */
export function createActivities(_deps: ActivityDeps) {
  return {};
}

export type Activities = ReturnType<typeof createActivities>;
