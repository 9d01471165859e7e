import type { Command } from 'commander';
import type { LifecycleAction } from '../../client/start-lifecycle.js';
import { printJson, withRuntime } from '../run.js';

const DESCRIPTIONS: Record<LifecycleAction, string> = {
  suspend: 'suspend a tenant at once (its own calls then fail with 403 SUBACCOUNT_SUSPENDED); the reason is recorded',
  resume:
    'resume a suspended tenant after review: a reason is required and its wallet must ' +
    'be at or above the configured floor',
  close:
    'close a tenant after cleanup: revoke its keys, delete its projects, prove it ' +
    'empty, then close (a repeat is a no-op)',
};

export function registerLifecycleCommands(program: Command): void {
  for (const action of Object.keys(DESCRIPTIONS) as LifecycleAction[]) {
    program
      .command(action)
      .description(DESCRIPTIONS[action])
      .argument('<externalRef>')
      .requiredOption('--reason <text>', 'why (recorded in the audit log)')
      .option('--operator <name>', 'who asks (recorded)', process.env.USER ?? 'unknown')
      .option('--no-wait', 'return once started')
      .option('--json', 'print JSON')
      .action(async (externalRef: string, opts: { reason: string; operator: string; wait: boolean; json?: boolean }) =>
        withRuntime(async (runtime) => {
          const [{ startLifecycle }, { failureOf }, { WorkflowFailedError }] = await Promise.all([
            import('../../client/start-lifecycle.js'),
            import('../../client/last-runs.js'),
            import('@temporalio/client'),
          ]);
          const handle = await startLifecycle(
            await runtime.client(),
            action,
            { externalRef, reason: opts.reason, operator: opts.operator },
            { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE },
          );
          if (!opts.wait) {
            if (opts.json) printJson({ workflowId: handle.workflowId });
            else console.log(`started ${handle.workflowId} (follow with: tenantctl status ${externalRef})`);
            return;
          }
          const result: unknown = await handle.result().catch((error: unknown) => {
            // "Workflow execution failed" says nothing: say what failed and why.
            if (!(error instanceof WorkflowFailedError)) throw error;
            const failure = failureOf(error);
            throw new Error(
              `${action} failed: ${[failure.message, ...failure.causes].join(': ')}${failure.type ? ` [${failure.type}]` : ''}`,
            );
          });
          if (opts.json) printJson(result);
          else console.log(`${action}: ${JSON.stringify(result)}`);
        }),
      );
  }
}
