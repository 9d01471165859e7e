import type { DataConverter } from '@temporalio/common';
import { Worker, type NativeConnection } from '@temporalio/worker';
import { platformTaskQueue } from '../../domain/ids.js';
import { platformActivitiesPerSecond, platformActivitySlots } from '../../../activities/keys/rotation-options.js';

/**
 * The worker for rotation's platform-calling activities: activities only, on the platform task
 * queue, with Temporal's server-side `maxTaskQueueActivitiesPerSecond` derived from the platform
 * request budget, and activity slots sized to it (platformActivitySlots). The server enforces the rate
 * across every worker polling the queue, so adding workers adds capacity without ever raising the rate
 * the platform sees.
 * Run it beside the main worker (same activities, same process is fine).
 */
export interface PlatformWorkerInput {
  connection: NativeConnection;
  namespace: string;
  /** The MAIN task queue; the platform queue's name is derived from it. */
  taskQueue: string;
  activities: object;
  /** Platform requests per second for all rotations together (PLATFORM_RATE_LIMIT_PER_SECOND). */
  requestsPerSecond: number;
  dataConverter?: DataConverter | undefined;
  maxConcurrentActivityTaskExecutions?: number;
}

export function createPlatformActivityWorker(input: PlatformWorkerInput): Promise<Worker> {
  return Worker.create({
    connection: input.connection,
    namespace: input.namespace,
    taskQueue: platformTaskQueue(input.taskQueue),
    activities: input.activities,
    maxTaskQueueActivitiesPerSecond: platformActivitiesPerSecond(input.requestsPerSecond),
    maxConcurrentActivityTaskExecutions:
      input.maxConcurrentActivityTaskExecutions ?? platformActivitySlots(input.requestsPerSecond),
    ...(input.dataConverter ? { dataConverter: input.dataConverter } : {}),
  });
}
