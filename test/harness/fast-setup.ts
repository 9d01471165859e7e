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
 * The fast workflow tests' world: ONE headless Temporal dev server (the CLI binary the project already
 * builds; the SDK's time-skipping server cannot be downloaded here) and the production workflows
 * bundled once. No Postgres, no simulator: activities are mocks handed to each test's worker.
 */
export default async function setup(project: TestProject) {
  const log = (line: string) => console.error(`[fast] ${line}`);
  const started = Date.now();
  const stops: Array<() => Promise<void>> = [];
  let address = process.env.TEMPORAL_ADDRESS;
  if (!address) {
    const server = await startTemporalDevServer({
      headless: true,
      port: 0,
      cliPath: process.env.TEMPORAL_CLI_PATH,
      onProgress: log,
      // The server fires no timer earlier than now + this shift (1 s by default): the tests' millisecond
      // polls would each take a second.
      dynamicConfig: { 'history.timerProcessorMaxTimeShift': '10ms' },
    });
    stops.push(() => server.stop());
    address = server.address;
  }
  const bundleDir = mkdtempSync(join(tmpdir(), 'tenant-orch-fast-bundle-'));
  const bundlePath = join(bundleDir, 'workflows.js');
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(fileURLToPath(new URL('../../workflows/index.ts', import.meta.url))),
    logger: quietLogger('bundle'),
  });
  writeFileSync(bundlePath, code);
  stops.push(async () => rmSync(bundleDir, { recursive: true, force: true }));
  project.provide('temporalAddress', address);
  project.provide('temporalNamespace', process.env.TEMPORAL_NAMESPACE ?? 'default');
  project.provide('workflowBundlePath', bundlePath);
  log(`Temporal ${address} and the workflow bundle ready in ${Date.now() - started} ms`);
  return async () => {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => log(`teardown: ${String(error)}`));
  };
}
