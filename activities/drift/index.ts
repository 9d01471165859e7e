import type { ActivityDeps } from '../context.js';
import { createDriftCheckActivities } from './check.js';
import { createDriftPlatformActivities } from './platform.js';
import { createDriftRecordActivities } from './records.js';

/** Drift reconciliation: platform reads and fixes (platform queue), records and bookkeeping (local). */
export function createDriftActivities(deps: ActivityDeps) {
  return {
    ...createDriftCheckActivities(deps),
    ...createDriftPlatformActivities(deps),
    ...createDriftRecordActivities(deps),
  };
}
