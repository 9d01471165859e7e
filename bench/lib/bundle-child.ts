/**
 * Child-process entry that bundles the benchmarks' workflows (bench/workflows.ts) to a file. Run
 * apart so webpack's memory never counts in the worker process's RSS.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/main/wiring/workflow-bundle.js';

const [outPath, entry] = process.argv.slice(2);
if (!outPath) throw new Error('usage: bundle-child.ts <out.js> [entry.ts]');
const { code } = await bundleWorkflowCode({
  ...workflowBundleOptions(entry ?? fileURLToPath(new URL('../workflows.ts', import.meta.url))),
  logger: {
    log: () => undefined,
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (message: string) => console.error(`[bundle] ${message}`),
    error: (message: string) => console.error(`[bundle] ${message}`),
  },
});
writeFileSync(outPath, code);
