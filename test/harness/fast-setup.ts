import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { workflowBundleOptions } from '../../src/main/wiring/workflow-bundle.js';
import { startTemporalDevServer } from '../../src/infra/temporal-dev-server.js';
import { quietLogger } from './quiet-logger.js';

/**
 * What makes a timer or task round trip take milliseconds instead of 125 ms to a second (measured on
 * this 2-core machine with a workflow looping `sleep(1)` + an activity: 1,020 ms per round trip by
 * default, 125 ms with the time shift alone, 22 ms with both):
 * - the server fires no timer earlier than now + `timerProcessorMaxTimeShift` (1 s by default), so
 *   every millisecond poll of a test would take a second;
 * - each history queue reads its tasks at most `*ProcessorMaxPollRPS` times a second (20 by default),
 *   shared by every run on the dev server's single shard: a timer, a workflow task, an activity task
 *   each waited for the next read slot, and parallel test files queued behind each other;
 * - an activity on the workflow's own task queue goes back to the worker with the workflow task's answer
 *   (eager activity execution, which the SDK asks for and the server refuses by default) instead of through
 *   a task queue poll: dispatchEvents' 200 activity rounds took 3.1 s instead of 4.3 s, and a fifth
 *   less of the server's CPU.
 * Kept at its default on purpose: `history.workflowIdReuseMinimalInterval` (a run that continues as new
 * within 1 s of its start has its next run held back to that second). At 1 ms the tests that poll every
 * millisecond spun faster and took the CPU from the files beside them: four key and onboarding files took
 * 45 s together instead of 35 s.
 */
/** The production workflows' entry, bundled with workflowBundleOptions (the worker's own options). */
export const PRODUCTION_WORKFLOWS_ENTRY = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/** Where the bundle of this run's workflow tests is, for a unit test that checks the same bundle. */
export const WORKFLOW_BUNDLE_ENV = 'TENANT_ORCH_FAST_WORKFLOW_BUNDLE';

export const FAST_SERVER_CONFIG = {
  'system.enableActivityEagerExecution': true,
  'history.timerProcessorMaxTimeShift': '10ms',
  'history.timerProcessorMaxPollRPS': 10_000,
  'history.transferProcessorMaxPollRPS': 10_000,
  'history.visibilityProcessorMaxPollRPS': 10_000,
  'history.outboundProcessorMaxPollRPS': 10_000,
} as const;

/**
 * The fast workflow tests' world: ONE headless Temporal dev server (the CLI binary the project already
 * builds; the SDK's time-skipping server cannot be downloaded here) and the production workflows
 * bundled once. No Postgres, no simulator: activities are mocks handed to each test's worker.
 */
export default async function setup(project: TestProject) {
  const log = (line: string) => console.error(`[fast] ${line}`);
  const started = Date.now();
  const stops: Array<() => Promise<void>> = [];
  // The dev server starts while the workflows are bundled (each about half of the setup's wall time).
  const serverStarting = process.env.TEMPORAL_ADDRESS
    ? undefined
    : startTemporalDevServer({
        headless: true,
        port: 0,
        cliPath: process.env.TEMPORAL_CLI_PATH,
        onProgress: log,
        dynamicConfig: FAST_SERVER_CONFIG,
      });
  const bundleDir = mkdtempSync(join(tmpdir(), 'tenant-orch-fast-bundle-'));
  stops.push(async () => rmSync(bundleDir, { recursive: true, force: true }));
  const bundlePath = join(bundleDir, 'workflows.js');
  const bundling = bundleWorkflowCode({
    ...workflowBundleOptions(PRODUCTION_WORKFLOWS_ENTRY),
    logger: quietLogger('bundle'),
  });
  const [server, bundle] = await Promise.allSettled([serverStarting, bundling]);
  if (server.status === 'fulfilled' && server.value) {
    const devServer = server.value;
    stops.push(() => devServer.stop());
  }
  if (server.status === 'rejected' || bundle.status === 'rejected') {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw server.status === 'rejected' ? server.reason : (bundle as PromiseRejectedResult).reason;
  }
  const address = server.value?.address ?? process.env.TEMPORAL_ADDRESS!;
  writeFileSync(bundlePath, bundle.value.code);
  // The unit files' check of this same bundle (test/unit/workflow-bundle.test.ts) reads it instead of bundling
  // again (webpack and swc: about 8 s of CPU on this 2-core machine) when it runs in the same vitest run: the
  // global setups run before any test file, and the test processes are started with this environment.
  process.env[WORKFLOW_BUNDLE_ENV] = bundlePath;
  project.provide('temporalAddress', address);
  project.provide('temporalNamespace', process.env.TEMPORAL_NAMESPACE ?? 'default');
  project.provide('workflowBundlePath', bundlePath);
  log(`Temporal ${address} and the workflow bundle ready in ${Date.now() - started} ms`);
  return async () => {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => log(`teardown: ${String(error)}`));
  };
}
