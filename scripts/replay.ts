/**
 * `npm run replay [-- --limit 50 --query '...']`: replays live histories from a cluster (the one the
 * configuration names: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS / API key / envconfig profile)
 * against this checkout's workflow code, before a deploy: every workflow type the worker registers (the exports of
 * workflows/index.ts). Exits 1 on any non-determinism.
 */
import { Command } from 'commander';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { loadCliConfig } from '../src/cli/context.js';
import { reportError } from '../src/main/report-error.js';
import { connectClient } from '../src/client/connection.js';
import { WORKFLOWS_PATH } from '../src/main/wiring/create-worker.js';
import { dataConverterOf } from '../src/main/wiring/data-converter.js';
import { workflowBundleOptions } from '../src/main/wiring/workflow-bundle.js';
import { WORKFLOW_TYPES } from '../src/main/wiring/workflow-types.js';

const program = new Command('replay')
  .option('--limit <n>', 'histories per workflow type (newest first)', '25')
  .option('--query <visibility query>', 'extra visibility filter, e.g. StartTime > "2026-11-01T00:00:00Z"')
  .parse(process.argv);
const opts = program.opts<{ limit: string; query?: string }>();

async function main(): Promise<number> {
  const config = loadCliConfig();
  const dataConverter = dataConverterOf(config);
  // Bundled once, the way the worker bundles (preloaded entry), and replayed type by type.
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(WORKFLOWS_PATH),
    logger: new DefaultLogger('WARN'),
  });
  const client = await connectClient(config, dataConverter);
  let failures = 0;
  try {
    console.log('workflow type'.padEnd(28) + 'replayed'.padEnd(10) + 'non-deterministic');
    for (const type of WORKFLOW_TYPES) {
      const query = `WorkflowType = "${type}"${opts.query ? ` AND (${opts.query})` : ''}`;
      const histories: Array<{
        workflowId: string;
        history: Awaited<ReturnType<ReturnType<typeof client.workflow.getHandle>['fetchHistory']>>;
      }> = [];
      for await (const execution of client.workflow.list({ query, pageSize: 100 })) {
        histories.push({
          workflowId: execution.workflowId,
          history: await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory(),
        });
        if (histories.length >= Number(opts.limit)) break;
      }
      const bad: string[] = [];
      if (histories.length > 0) {
        for await (const result of Worker.runReplayHistories(
          { workflowBundle: { code }, ...(dataConverter ? { dataConverter } : {}) },
          histories,
        )) {
          if (result.error) bad.push(`${result.workflowId}: ${result.error.message.split('\n')[0]}`);
        }
      }
      failures += bad.length;
      console.log(type.padEnd(28) + String(histories.length).padEnd(10) + String(bad.length));
      for (const line of bad) console.log(`  ${line}`);
    }
  } finally {
    await client.connection.close();
  }
  return failures === 0 ? 0 : 1;
}

main().then(
  (code) => (process.exitCode = code),
  (error: unknown) => (process.exitCode = reportError(error)),
);
