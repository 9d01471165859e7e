import * as workflows from '../../../workflows/index.js';

/**
 * Every workflow type the worker registers: the worker bundles workflows/index.ts (WORKFLOWS_PATH) and registers each
 * of its exports under its name, so the names of those exports are the list, kept nowhere else. For scripts and tests
 * (npm run replay, the histories' coverage): importing it loads the workflow code, which a worker process never does
 * outside its bundle.
 */
export type WorkflowType = keyof typeof workflows;
export const WORKFLOW_TYPES: readonly WorkflowType[] = (Object.keys(workflows) as WorkflowType[]).sort();
