/**
 * How every workflow bundle of this project is made: the production build (scripts/build-dist.js), a
 * worker run from the sources, the bench and the test suite all bundle through here, so what runs in
 * production is what was measured and tested.
 *
 * The entry module is preloaded: the SDK's reusable V8 context evaluates it, and every module it
 * imports (our workflows, src/domain, the SDK's workflow API), once, and shares them, deep-frozen,
 * across workflows. Without it each new workflow evaluated its own copy of about 50 modules, and each
 * cached workflow kept that copy. Measured on the workflow side alone (the recorded onboarding history
 * replayed 1,000 times with `Worker.runReplayHistories`, three alternations): RSS 246–251 MB → 201–202 MB,
 * CPU per replay 15.5–21.8 ms → 15.6–17.4 ms. In the full bench the effect is inside its noise.
 *
 * What makes this safe is a rule of the workflow code, checked by test/unit/workflow-bundle.test.ts:
 * no module-level mutable state (no top-level `let`/`var`, no module-level Map/Set). A module's state
 * would be shared by every workflow of the worker; frozen exports make a mutation of an exported
 * object throw instead of leaking.
 */
export interface WorkflowBundleOptions {
  workflowsPath: string;
  preloadModules: string[];
}

export function workflowBundleOptions(workflowsPath: string): WorkflowBundleOptions {
  return { workflowsPath, preloadModules: [workflowsPath] };
}
