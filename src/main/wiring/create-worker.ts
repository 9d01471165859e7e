import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DataConverter } from '@temporalio/common';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { projectPath } from '../../infra/project-root.js';
import { workflowBundleOptions } from './workflow-bundle.js';

/** The production workflows, bundled by the worker at start (or given pre-bundled, e.g. by tests). */
export const WORKFLOWS_PATH = projectPath('workflows', 'index.ts');

/**
 * `npm run build` bundles the workflows next to the compiled code (dist/workflow-bundle.js). This module's compiled
 * copy (dist/src/main/wiring/) finds it three levels up and loads it: no webpack in the worker's process (issue 20:
 * about 110 MB of RSS). bin/tenantctl.js runs dist/ only while it is fresh, so the bundle is never older than the
 * sources. Run from the sources, the path is the checkout's root, where no bundle is: the worker bundles at start.
 */
export const PREBUILT_BUNDLE = fileURLToPath(new URL('../../../workflow-bundle.js', import.meta.url));

/** Where this worker's workflow code comes from: given, prebuilt by the build, or bundled now. */
export function workflowSourceOf(input: Pick<CreateWorkerInput, 'workflowBundle' | 'workflowsPath'>) {
  if (input.workflowBundle) return { workflowBundle: input.workflowBundle };
  if (!input.workflowsPath && existsSync(PREBUILT_BUNDLE)) return { workflowBundle: { codePath: PREBUILT_BUNDLE } };
  const { workflowsPath, preloadModules } = workflowBundleOptions(input.workflowsPath ?? WORKFLOWS_PATH);
  return { workflowsPath, bundlerOptions: { preloadModules } };
}

export type WorkflowSource = ReturnType<typeof workflowSourceOf>;

export interface CreateWorkerInput {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: object;
  dataConverter?: DataConverter | undefined;
  /** A pre-built bundle (tests bundle once per run); else WORKFLOWS_PATH is bundled. */
  workflowBundle?: { codePath: string } | undefined;
  workflowsPath?: string;
  /** Already decided by the caller (workflowSourceOf, e.g. to print it): used as it is. */
  source?: WorkflowSource;
  tuning?: Partial<
    Pick<
      WorkerOptions,
      | 'maxConcurrentActivityTaskExecutions'
      | 'maxConcurrentWorkflowTaskExecutions'
      | 'maxActivitiesPerSecond'
      | 'maxTaskQueueActivitiesPerSecond'
      | 'maxCachedWorkflows'
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
    ...(input.source ?? workflowSourceOf(input)),
    ...input.tuning,
  });
}
