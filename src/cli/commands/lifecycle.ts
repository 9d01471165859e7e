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
    'empty, write its final statement, then close (a repeat is a no-op). With --after ' +
    '(default CLOSE_DELAY) it is suspended now and closed when the window ends; ' +
    '--cancel undoes that inside the window',
};

interface LifecycleFlags {
  reason: string;
  operator?: string;
  wait: boolean;
  json?: boolean;
  after?: string;
  cancel?: boolean;
}

export function registerLifecycleCommands(program: Command): void {
  for (const action of Object.keys(DESCRIPTIONS) as LifecycleAction[]) {
    const command = program
      .command(action)
      .description(DESCRIPTIONS[action])
      .argument('<externalRef>')
      .requiredOption('--reason <text>', 'why (recorded in the audit log)')
      .option(
        '--operator <name>',
        'who asks (recorded); only without an OPERATORS list, where the token says who (default: $USER)',
      )
      .option('--no-wait', 'return once started')
      .option('--json', 'print JSON');
    if (action === 'close')
      command
        .option('--after <duration>', 'suspend now, close after this: 0 (at once) or e.g. 12h, 30d, at most 365d')
        .option('--cancel', 'cancel a close that waits out its window: the tenant is put back as it was');
    command.action(async (externalRef: string, opts: LifecycleFlags) =>
      withRuntime(async (runtime) => {
        const [{ startLifecycle, cancelClose }, { runFailureOf }] = await Promise.all([
          import('../../client/start-lifecycle.js'),
          import('../../client/last-runs.js'),
        ]);
        const operator = runtime.operator(opts.operator, process.env.USER ?? 'unknown');
        if (opts.cancel) {
          if (opts.after !== undefined) throw new Error('--after: not with --cancel');
          const answer = await cancelClose(await runtime.client(), externalRef, { operator, reason: opts.reason });
          if (opts.json) printJson({ externalRef, cancelled: true, ...answer });
          else console.log(`close of ${externalRef} cancelled (now ${answer.stage}): ${answer.effect}`);
          return;
        }
        const { InvalidInputError } = await import('../../domain/tenant-input.js');
        const handle = await startLifecycle(
          await runtime.client(),
          action,
          { externalRef, reason: opts.reason, operator, ...(opts.after !== undefined ? { after: opts.after } : {}) },
          {
            taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
            closeDelay: runtime.safeOps.closeDelay,
            closeSooner:
              action === 'close' &&
              (await import('../../secrets/roles.js')).roleAllows(runtime.role(), 'close.immediate'),
          },
        ).catch((error: unknown) => {
          // Named by the flag the operator typed.
          if (error instanceof InvalidInputError)
            throw new InvalidInputError(error.problems.map((p) => p.replace(/^after:/, '--after:')));
          throw error;
        });
        const after = action === 'close' ? (opts.after ?? runtime.safeOps.closeDelay) : '0';
        if (opts.wait && after !== '0') {
          // A delayed close waits days: answer once the tenant is suspended and the window runs.
          const { waitForCloseWindow } = await import('../../client/close-window.js');
          const status = await waitForCloseWindow(await runtime.client(), externalRef);
          if (opts.json) printJson({ workflowId: handle.workflowId, ...status });
          else
            console.log(
              status.stage === 'scheduled'
                ? `close of ${externalRef} scheduled: suspended now, closes at ${status.closeAt} ` +
                    `(undo inside the window: tenantctl close --cancel ${externalRef} --reason "...")`
                : `close of ${externalRef}: ${status.stage}`,
            );
          return;
        }
        if (!opts.wait) {
          if (opts.json) printJson({ workflowId: handle.workflowId });
          else console.log(`started ${handle.workflowId} (follow with: tenantctl status ${externalRef})`);
          return;
        }
        const result: unknown = await handle.result().catch((error: unknown) => {
          // "Workflow execution failed" says nothing: say what failed and why.
          const failure = runFailureOf(error);
          if (!failure) throw error;
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
