import type { Command } from 'commander';
import type { LifecycleAction } from '../../client/tenants/start-lifecycle.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

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
      .option('--no-wait', 'return once started')
      .option('--json', 'print JSON');
    if (action === 'close')
      command
        .option(
          '--after <duration>',
          "suspend now, close after this: 0 (at once) or e.g. 12h, 30d, at most 365d (the server's CLOSE_DELAY " +
            'is the default and the minimum; only an admin closes sooner)',
        )
        .option('--cancel', 'cancel a close that waits out its window: the tenant is put back as it was');
    command.action(async (externalRef: string, opts: LifecycleFlags) =>
      withGateway(async (gateway) => {
        // Who asks is the token's name; the close delay's minimum and every other rule are the server's.
        const path = `/v1/tenants/${segment(externalRef, 'externalRef')}`;
        if (opts.cancel) {
          if (opts.after !== undefined) throw new Error('--after: not with --cancel');
          const answer = await gateway.post<{ externalRef: string; cancelled: true; stage: string; effect: string }>(
            `${path}/close/cancel`,
            { reason: opts.reason },
          );
          if (opts.json) printJson(answer);
          else printLine(`close of ${externalRef} cancelled (now ${answer.stage}): ${answer.effect}`);
          return;
        }
        const started = await gateway
          .post<{ workflowId: string }>(`${path}/${action}`, {
            reason: opts.reason,
            ...(opts.after !== undefined ? { after: opts.after } : {}),
          })
          .catch(async (error: unknown) => {
            // Named by the flag the operator typed.
            const { GatewayCallError } = await import('../../api-client/gateway-client.js');
            if (error instanceof GatewayCallError && error.code === 'INVALID_INPUT' && error.fields.includes('after'))
              throw new GatewayCallError(
                error.status,
                error.code,
                error.message.replace(/(^|: |; )after:/g, '$1--after:'),
                error.fields,
              );
            throw error;
          });
        if (!opts.wait) {
          if (opts.json) printJson({ workflowId: started.workflowId });
          else printLine(`started ${started.workflowId} (follow with: tenantctl status ${externalRef})`);
          return;
        }
        const { pollTenant, endedRun, lastRunResult } = await import('../wait-for-run.js');
        const outcome = await pollTenant(
          gateway,
          externalRef,
          (view) => {
            const run = endedRun(view, action);
            if (run) return { run };
            // A delayed close waits days: answer once the tenant is suspended and the window runs.
            const close = view.close;
            if (action === 'close' && close?.closeAt && close.stage !== 'closing') return { window: close };
            return undefined;
          },
          action,
        );
        const status = outcome.window;
        if (status) {
          if (opts.json) printJson({ workflowId: started.workflowId, ...status });
          else
            printLine(
              status.stage === 'scheduled'
                ? `close of ${externalRef} scheduled: suspended now, closes at ${status.closeAt} ` +
                    `(undo inside the window: tenantctl close --cancel ${externalRef} --reason "...")`
                : `close of ${externalRef}: ${status.stage}`,
            );
          return;
        }
        const result = lastRunResult<unknown>(action, outcome.run!);
        if (opts.json) printJson(result);
        else printLine(`${action}: ${JSON.stringify(result)}`);
      }),
    );
  }
}
