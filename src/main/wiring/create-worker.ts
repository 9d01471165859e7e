import { type DataConverter } from '@temporalio/common';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { projectPath } from '../../infra/project-root.js';

/** The production workflows, bundled by the worker at start (or given pre-bundled, e.g. by tests). */
export const WORKFLOWS_PATH = projectPath('workflows', 'index.ts');

export interface CreateWorkerInput {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: object;
  dataConverter?: DataConverter | undefined;
  /** A pre-built bundle (tests bundle once per run); else WORKFLOWS_PATH is bundled. */
  workflowBundle?: { codePath: string } | undefined;
  workflowsPath?: string;
  tuning?: Partial<
    Pick<
      WorkerOptions,
      | 'maxConcurrentActivityTaskExecutions'
      | 'maxConcurrentWorkflowTaskExecutions'
      | 'maxActivitiesPerSecond'
      | 'maxTaskQueueActivitiesPerSecond'
    >
  >;
}

export function createWorker(input: CreateWorkerInput): Promise<Worker> {
  return Worker.create({
    connection: input.connection,
    namespace: input.namespace,
    taskQueue: input.taskQueue,
    activities: input.activities,
    ...(input.dataConverter ? { dataConverter: input.dataConverter } : {}),
    ...(input.workflowBundle
      ? { workflowBundle: input.workflowBundle }
      : { workflowsPath: input.workflowsPath ?? WORKFLOWS_PATH }),
    ...input.tuning,
  });
}
