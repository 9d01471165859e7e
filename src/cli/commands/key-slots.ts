import type { Command } from 'commander';
import { printJson, withRuntime } from '../run.js';

/** `tenantctl key issue|list|revoke`: a key per workload and environment (slots), beside `key reveal`. */
export function registerKeySlotCommands(key: Command): void {
  key
    .command('issue')
    .description("issue a tenant's key in a slot (create, seal, verify, record); a slot with a key keeps it")
    .argument('<externalRef>')
    .requiredOption('--slot <slot>', 'key slot, e.g. ci or prod-web (1-32 of a-z 0-9 -)')
    .option('--key-limit-retry <duration>', 'at the active-key limit: retry the create this often')
    .option('--operator <name>', 'who asks (audited)')
    .option('--wait', 'wait for the key to be issued')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: { slot: string; keyLimitRetry?: string; operator?: string; wait?: boolean; json?: boolean },
      ) =>
        withRuntime(async (runtime) => {
          const { startKeyIssue } = await import('../../client/key-slots.js');
          const handle = await startKeyIssue(
            { client: await runtime.client(), pool: runtime.pool() },
            {
              externalRef,
              slot: opts.slot,
              ...(opts.operator ? { operator: opts.operator } : {}),
              ...(opts.keyLimitRetry ? { options: { keyLimitRetryInterval: opts.keyLimitRetry } } : {}),
            },
            { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE },
          );
          const started = { workflowId: handle.workflowId, started: handle.started };
          const result = opts.wait ? await handle.result() : undefined;
          if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
          else if (result)
            console.log(
              `key ${result.slot} g${result.generation} ${result.outcome}: ${result.keyId} (${result.fingerprint})`,
            );
          else console.log(`${handle.started ? 'started' : 'already running'}: ${handle.workflowId}`);
        }),
    );

  key
    .command('list')
    .description("a tenant's keys by slot and generation (ids and fingerprints, never a secret)")
    .argument('<externalRef>')
    .option('--slot <slot>', 'only this slot')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { slot?: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const [{ listSlotKeys }, { namedSlotSchema }, { parseInput }] = await Promise.all([
          import('../../client/key-slots.js'),
          import('../../domain/key-slot-input.js'),
          import('../../domain/tenant-input.js'),
        ]);
        const slot = opts.slot === undefined ? undefined : parseInput(namedSlotSchema, opts.slot);
        const keys = (await listSlotKeys(runtime.pool(), externalRef)).filter((k) => !slot || k.slot === slot);
        if (opts.json) return printJson(keys);
        for (const k of keys)
          console.log(
            `${k.slot.padEnd(16)} g${k.generation} ${k.status.padEnd(8)} ${k.keyId ?? '-'} ` +
              `${k.fingerprint ?? ''}${k.verified ? ' (verified)' : ''}`,
          );
      }),
    );

  key
    .command('revoke')
    .description("revoke a slot's key once the platform shows it unused (the quiet gate), or at once with --force")
    .argument('<externalRef>')
    .requiredOption('--slot <slot>', 'key slot')
    .option('--force', 'skip the quiet gate (needs --operator and --reason; audited)')
    .option('--operator <name>', 'who revokes (audited)')
    .option('--reason <text>', 'why (audited)')
    .option('--quiet-period <duration>', 'no new use for this long before the revoke')
    .option('--poll-interval <duration>', 'how often the key record is read')
    .option('--quiet-deadline <duration>', 'still in use after this long: refused')
    .option('--overlap-window <duration>', 'no last-use shown: wait this long, then revoke')
    .option('--no-wait', 'do not wait for the outcome')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: {
          slot: string;
          force?: boolean;
          operator?: string;
          reason?: string;
          quietPeriod?: string;
          pollInterval?: string;
          quietDeadline?: string;
          overlapWindow?: string;
          wait: boolean;
          json?: boolean;
        },
      ) =>
        withRuntime(async (runtime) => {
          const { startKeyRevoke } = await import('../../client/key-slots.js');
          const options = {
            ...(opts.quietPeriod ? { quietPeriod: opts.quietPeriod } : {}),
            ...(opts.pollInterval ? { pollInterval: opts.pollInterval } : {}),
            ...(opts.quietDeadline ? { quietDeadline: opts.quietDeadline } : {}),
            ...(opts.overlapWindow ? { overlapWindow: opts.overlapWindow } : {}),
          };
          const handle = await startKeyRevoke(
            { client: await runtime.client(), pool: runtime.pool() },
            {
              externalRef,
              slot: opts.slot,
              force: Boolean(opts.force),
              ...(opts.operator !== undefined ? { operator: opts.operator } : {}),
              ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
              ...(Object.keys(options).length ? { options } : {}),
            },
            { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE },
          );
          const started = { workflowId: handle.workflowId, started: handle.started };
          const result = opts.wait ? await handle.result() : undefined;
          if (opts.json) printJson({ ...started, ...(result ? { result } : {}) });
          else if (result) console.log(`key ${result.slot} ${result.keyId}: ${result.outcome} — ${result.verdict}`);
          else console.log(`${handle.started ? 'started' : 'already running'}: ${handle.workflowId}`);
          if (result?.outcome === 'refused') process.exitCode = 3;
        }),
    );
}
