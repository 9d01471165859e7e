import type { Command } from 'commander';
import type { DriftFindingRow } from '../../db/drift-findings-store.js';
import type { ReconcileFleetResult } from '../../../workflows/reconcile-fleet-messages.js';
import { printJson, withRuntime } from '../run.js';

// Each action loads what it uses (see run.ts): `tenantctl --help` loads none of it.
const findingsStore = () => import('../../db/drift-findings-store.js');
const schedules = () => import('../../client/drift-schedules.js');

function findingLine(f: DriftFindingRow): string {
  const fixed = f.resolution === 'fixed' ? ` fixed (${f.fix})` : '';
  return (
    `${f.status.padEnd(8)} ${f.kind.padEnd(26)} ${(f.externalRef ?? '-').padEnd(20)} ` +
    `${f.subject}${fixed}  first ${f.firstSeen.toISOString()} last ` +
    `${f.lastSeen.toISOString()} ×${f.seenCount}`
  );
}

function printResult(result: ReconcileFleetResult): void {
  const t = result.totals;
  console.log(
    `drift check ${result.checkId} (${result.scope}): ${t.tenantsChecked} tenant(s) ` +
      `checked, ${t.skipped} skipped, ${t.failed} failed, ${t.fixesApplied} fix(es) ` +
      `applied`,
  );
  for (const s of result.skipped) console.log(`  skipped ${s.externalRef}: ${s.reason}`);
  for (const f of result.fixes) console.log(`  fixed ${f.kind} ${f.subject}: ${f.fix}`);
  const open = Object.entries(result.openByKind).filter(([, n]) => n > 0);
  console.log(
    open.length
      ? `open findings: ${open.map(([k, n]) => `${k}=${n}`).join(', ')} (tenantctl drift list --open)`
      : 'open findings: none',
  );
}

export function registerDriftCommands(program: Command): void {
  const drift = program.command('drift').description('drift: where the platform and our records disagree');

  drift
    .command('check')
    .description('run a drift check now (the whole fleet, or one tenant) and wait for it')
    .option('--tenant <externalRef>', 'check one tenant only')
    .option(
      '--quiet-period <duration>',
      'override DRIFT_QUIET_PERIOD for this check (orphan keys must be quiet this long to be revoked)',
    )
    .option('--rotation-max-age <duration>', 'override DRIFT_ROTATION_MAX_AGE for this check')
    .option('--no-wait', 'start (or join) the check and return')
    .option('--json', 'print JSON')
    .action(
      async (opts: { tenant?: string; quietPeriod?: string; rotationMaxAge?: string; wait: boolean; json?: boolean }) =>
        withRuntime(async (runtime) => {
          const options = {
            ...(opts.quietPeriod ? { quietPeriod: opts.quietPeriod } : {}),
            ...(opts.rotationMaxAge ? { rotationMaxAge: opts.rotationMaxAge } : {}),
          };
          const input = {
            ...(opts.tenant ? { externalRef: opts.tenant } : {}),
            ...(Object.keys(options).length ? { options } : {}),
          };
          const { startDriftCheck } = await import('../../client/start-drift-check.js');
          const { listFindings } = await findingsStore();
          const handle = await startDriftCheck({ client: await runtime.client(), pool: runtime.pool() }, input, {
            taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
          });
          if (!opts.wait) {
            if (opts.json) printJson({ workflowId: handle.workflowId });
            else console.log(`drift check running: ${handle.workflowId}`);
            return;
          }
          const result = await handle.result();
          const findings = (
            await listFindings(runtime.pool(), { openOnly: true, ...(opts.tenant ? { externalRef: opts.tenant } : {}) })
          ).filter((f) => f.lastCheckId === result.checkId);
          if (opts.json) printJson({ ...result, findings });
          else {
            printResult(result);
            for (const f of findings) console.log(`  ${findingLine(f)}\n    evidence: ${JSON.stringify(f.evidence)}`);
          }
        }),
    );

  drift
    .command('list')
    .description('drift findings, open first (resolved ones are kept)')
    .option('--open', 'open findings only')
    .option('--tenant <externalRef>', 'one tenant only')
    .option('--limit <n>', 'at most this many', '500')
    .option('--json', 'print JSON (with evidence)')
    .action(async (opts: { open?: boolean; tenant?: string; limit: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        if (!/^[1-9][0-9]{0,5}$/.test(opts.limit)) throw new Error('--limit: must be a positive whole number');
        const { listFindings } = await findingsStore();
        const rows = await listFindings(runtime.pool(), {
          openOnly: Boolean(opts.open),
          ...(opts.tenant ? { externalRef: opts.tenant } : {}),
          limit: Number(opts.limit),
        });
        if (opts.json) printJson(rows);
        else if (rows.length === 0) console.log(opts.open ? 'no open drift findings' : 'no drift findings');
        else for (const row of rows) console.log(findingLine(row));
      }),
    );

  const schedule = drift.command('schedule').description('the scheduled fleet drift check (overlap policy SKIP)');
  schedule
    .command('create')
    .description('create or update the fleet drift schedule')
    .option('--every <duration>', 'interval (default DRIFT_SCHEDULE_EVERY, 1h)')
    .option('--jitter <duration>', 'start each run up to this much later')
    .action(async (opts: { every?: string; jitter?: string }) =>
      withRuntime(async (runtime) => {
        const every = opts.every ?? runtime.config.DRIFT_SCHEDULE_EVERY;
        const { scheduleDriftCheck } = await schedules();
        const made = await scheduleDriftCheck(
          await runtime.client(),
          {},
          { every, jitter: opts.jitter },
          runtime.config.TEMPORAL_TASK_QUEUE,
        );
        console.log(
          `${made.outcome} schedule ${made.scheduleId}: every ${every}${opts.jitter ? ` (jitter ${opts.jitter})` : ''}, ` +
            `overlap SKIP`,
        );
      }),
    );
  schedule
    .command('show')
    .description('the drift schedule, if any')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withRuntime(async (runtime) => {
        const { describeDriftSchedule } = await schedules();
        const view = await describeDriftSchedule(await runtime.client());
        if (opts.json) printJson(view);
        else
          console.log(
            view
              ? `${view.scheduleId} ${view.paused ? 'paused' : 'active'} every ` +
                  `${view.every.join(', ')} next ${view.nextActionTimes[0] ?? '-'}`
              : 'no drift schedule',
          );
      }),
    );
  for (const name of ['pause', 'unpause', 'delete', 'run-now'] as const) {
    schedule
      .command(name)
      .description(`${name} the drift schedule`)
      .action(async () =>
        withRuntime(async (runtime) => {
          const { controlDriftSchedule } = await schedules();
          await controlDriftSchedule(await runtime.client(), name);
          console.log(`${name}: drift schedule`);
        }),
      );
  }
}
