import type { Command } from 'commander';
import type { DriftFindingRow } from '../../db/drift-findings-store.js';
import type { ReconcileFleetResult } from '../../../workflows/reconcile-fleet-messages.js';
import type { RunView } from '../../client/run-status.js';
import type { GatewayClient } from '../../api-client/gateway-client.js';
import type { describeDriftSchedule } from '../../client/drift/drift-schedules.js';
import { withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';
import { DEFAULTS } from '../../config/defaults.js';

// A client of the gateway's /v1/drift routes: the server starts, schedules and reads the checks.

/** A finding as the gateway answers it (dates as ISO strings). */
type Finding = Omit<DriftFindingRow, 'firstSeen' | 'lastSeen'> & { firstSeen: string; lastSeen: string };
type DriftScheduleView = NonNullable<Awaited<ReturnType<typeof describeDriftSchedule>>>;

function findingLine(f: Finding): string {
  const fixed = f.resolution === 'fixed' ? ` fixed (${f.fix})` : '';
  return (
    `${f.status.padEnd(8)} ${f.kind.padEnd(26)} ${(f.externalRef ?? '-').padEnd(20)} ` +
    `${f.subject}${fixed}  first ${f.firstSeen} last ` +
    `${f.lastSeen} ×${f.seenCount}`
  );
}

function printResult(result: ReconcileFleetResult): void {
  const t = result.totals;
  printLine(
    `drift check ${result.checkId} (${result.scope}): ${t.tenantsChecked} tenant(s) ` +
      `checked, ${t.skipped} skipped, ${t.failed} failed, ${t.fixesApplied} fix(es) ` +
      `applied`,
  );
  for (const s of result.skipped) printLine(`  skipped ${s.externalRef}: ${s.reason}`);
  for (const f of result.fixes) printLine(`  fixed ${f.kind} ${f.subject}: ${f.fix}`);
  const open = Object.entries(result.openByKind).filter(([, n]) => n > 0);
  printLine(
    open.length
      ? `open findings: ${open.map(([k, n]) => `${k}=${n}`).join(', ')} (tenantctl drift list --open)`
      : 'open findings: none',
  );
}

/** `--wait`: the check of this scope, polled through the gateway until it ended, with the open findings it saw. */
async function waitForCheck(
  gateway: GatewayClient,
  tenant: string | undefined,
): Promise<{ result: ReconcileFleetResult; findings: Finding[] }> {
  const { completedResult, endedRunAt } = await import('../poll-run.js');
  const { run, findings } = await endedRunAt<
    { run: RunView<ReconcileFleetResult> | null; findings: Finding[] },
    ReconcileFleetResult
  >(gateway, '/v1/drift/checks/latest', { tenant });
  return { result: completedResult(run), findings };
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
        withGateway(async (gateway) => {
          const options = {
            ...(opts.quietPeriod ? { quietPeriod: opts.quietPeriod } : {}),
            ...(opts.rotationMaxAge ? { rotationMaxAge: opts.rotationMaxAge } : {}),
          };
          const started = await gateway.call<{ workflowId: string }>('POST', '/v1/drift/checks', {
            body: {
              ...(opts.tenant ? { externalRef: opts.tenant } : { fleet: true }),
              ...(Object.keys(options).length ? { options } : {}),
            },
          });
          if (!opts.wait) {
            if (opts.json) printJson({ workflowId: started.data.workflowId });
            else printLine(`drift check running: ${started.data.workflowId}`);
            return;
          }
          const { result, findings } = await waitForCheck(gateway, opts.tenant);
          if (opts.json) printJson({ ...result, findings });
          else {
            printResult(result);
            for (const f of findings) {
              printLine(`  ${findingLine(f)}`);
              printLine(`    evidence: ${JSON.stringify(f.evidence)}`);
            }
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
      withGateway(async (gateway) => {
        if (!/^[1-9][0-9]{0,5}$/.test(opts.limit)) throw new Error('--limit: must be a positive whole number');
        const rows = await gateway.get<Finding[]>('/v1/drift/findings', {
          open: opts.open ? 'true' : undefined,
          tenant: opts.tenant,
          limit: opts.limit,
        });
        if (opts.json) printJson(rows);
        else if (rows.length === 0) printLine(opts.open ? 'no open drift findings' : 'no drift findings');
        else for (const row of rows) printLine(findingLine(row));
      }),
    );

  const schedule = drift.command('schedule').description('the scheduled fleet drift check (overlap policy SKIP)');
  schedule
    .command('create')
    .description('create or update the fleet drift schedule')
    .option('--every <duration>', `interval (default DRIFT_SCHEDULE_EVERY, ${DEFAULTS.DRIFT_SCHEDULE_EVERY})`)
    .option('--jitter <duration>', 'start each run up to this much later')
    .action(async (opts: { every?: string; jitter?: string }) =>
      withGateway(async (gateway) => {
        // Without --every: the server's default (DRIFT_SCHEDULE_EVERY where the gateway runs).
        const every = opts.every ?? (await gateway.get<{ defaultEvery: string }>('/v1/drift/schedule')).defaultEvery;
        const made = await gateway.post<{ scheduleId: string; outcome: string }>('/v1/drift/schedule', {
          every,
          ...(opts.jitter ? { jitter: opts.jitter } : {}),
        });
        printLine(
          `${made.outcome} schedule ${made.scheduleId}: every ` +
            `${every}${opts.jitter ? ` (jitter ${opts.jitter})` : ''}, ` +
            `overlap SKIP`,
        );
      }),
    );
  schedule
    .command('show')
    .description('the drift schedule, if any')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = (await gateway.get<{ schedule: DriftScheduleView | null }>('/v1/drift/schedule')).schedule;
        if (opts.json) printJson(view);
        else
          printLine(
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
        withGateway(async (gateway) => {
          await gateway.post(`/v1/drift/schedule/${name}`);
          printLine(`${name}: drift schedule`);
        }),
      );
  }
}
