import type { Command } from 'commander';
import type { GatewayClient } from '../../api-client/gateway-client.js';
import type { ApplyOutcome, ImportStart } from '../../client/imports/import-apply.js';
import type { ImportPlan, PlanRow } from '../../client/imports/import-plan.js';
import type { ClosedImport } from '../../client/imports/import-closed.js';
import type { RunView } from '../../client/run-status.js';
import type { ImportTenantResult } from '../../domain/import-input.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

/**
 * `tenantctl import plan|apply` through the gateway (`/v1/imports`, permission imports.manage): the gateway
 * lists the platform with the parent key it holds and starts the runs; who asks is the token's name. The
 * `--map` file is read here and sent as data (the gateway checks it: one error a problem, naming its line).
 */
async function mapOf(file: string | undefined): Promise<{ map?: { file: string; text: string } }> {
  if (file === undefined) return {};
  const { readFile } = await import('node:fs/promises');
  try {
    return { map: { file, text: await readFile(file, 'utf8') } };
  } catch (error) {
    const { InvalidInputError } = await import('../../domain/tenant-input.js');
    throw new InvalidInputError([
      `--map ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
}

const POLL_MS = 500;

/**
 * Follows the started runs to their end, side by side (one look at each still running per round), so
 * a `--timeout` that ends first can say where each of them stands.
 */
async function resultsOf(gateway: GatewayClient, start: ImportStart): Promise<ApplyOutcome['results']> {
  const results: ApplyOutcome['results'] = start.notStarted.map((r) => ({ ok: false as const, ...r }));
  const { hasEnded, pollUntil, standingOf } = await import('../poll-run.js');
  const running = new Map(start.started.map((row) => [row.externalRef, { row, run: null as RunView | null }]));
  await pollUntil(
    async () => {
      for (const [ref, entry] of running) {
        const { run } = await gateway.get<{ run: RunView<ImportTenantResult> | null }>(
          `/v1/imports/${segment(ref, 'externalRef')}`,
        );
        entry.run = run;
        if (!run || !hasEnded(run)) continue;
        running.delete(ref);
        if (run.status === 'COMPLETED' && run.result)
          results.push({ ok: true, workflowId: entry.row.workflowId, ...run.result });
        else {
          const why = run.failure ? [run.failure.message, ...run.failure.causes].join(': ') : `ended ${run.status}`;
          results.push({ ok: false, ...entry.row, error: why });
        }
      }
      return running.size === 0 ? true : undefined;
    },
    POLL_MS,
    () =>
      [...running.values()].map(({ row, run }) =>
        standingOf(run ?? { workflowId: row.workflowId, status: 'RUNNING', waiting: null }),
      ),
  );
  return results.sort((a, b) => a.externalRef.localeCompare(b.externalRef));
}

function rowLine(row: PlanRow): string {
  const keys = row.activeKeys === null ? '?' : String(row.activeKeys.length);
  const what = row.importable ? 'import' : 'skip  ';
  const ref = row.externalRef ? `${row.externalRef}${row.refSource === 'map' ? ' (mapped)' : ''}` : '-';
  return (
    `${what} ${row.subaccountId.padEnd(24)} ref ${ref.padEnd(24)} ` +
    `${row.status.padEnd(10)} keys ${keys} projects ${row.projects ?? '?'} balance ` +
    `${row.balanceMicroUsd ?? '?'}`
  );
}

function printPlan(plan: ImportPlan): void {
  printLine(
    `${plan.listed} live sub-account(s) listed, ${plan.recorded} already in our ` +
      `records, ${plan.rows.length} without a record: ${plan.importable} importable`,
  );
  for (const row of plan.rows) {
    printLine(rowLine(row));
    for (const c of row.conflicts) printLine(`       conflict ${c.code}: ${c.message}`);
  }
}

function printClosed(outcome: ClosedImport, applied: boolean): void {
  printLine(
    `${outcome.rows.length} tenant(s) onboarded and closed since ${outcome.since} that no record holds` +
      (applied ? `: ${outcome.recorded.length} recorded, ${outcome.alreadyRecorded.length} recorded already` : ''),
  );
  for (const row of outcome.rows) {
    const state = row.problems.length
      ? 'skip    '
      : !applied
        ? 'record  '
        : outcome.recorded.includes(row.externalRef)
          ? 'recorded'
          : 'already ';
    const moved = row.transfers.reduce((sum, t) => sum + BigInt(t.amountMicroUsd), 0n);
    printLine(
      `  ${state} ${row.externalRef} ${row.subaccountId} closed by ${row.closedBy}, ` +
        `${row.transfers.length} transfer(s) of ${moved} micro-USD`,
    );
    for (const problem of row.problems) printLine(`    ${problem}`);
  }
}

export function registerImportCommands(program: Command): void {
  const cmd = program
    .command('import')
    .description('bring sub-accounts that exist on the platform already under our records');

  cmd
    .command('plan')
    .description('what import would do with each sub-account no record owns (reads only; nothing is written)')
    .option('--map <file>', 'CSV of subaccountId,externalRef for sub-accounts that carry no externalRef')
    .option('--json', 'print JSON')
    .action(async (opts: { map?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const plan = await gateway.post<ImportPlan>('/v1/imports/plan', await mapOf(opts.map));
        if (opts.json) printJson(plan);
        else printPlan(plan);
      }),
    );

  cmd
    .command('closed')
    .description(
      'after a restore of the records: the tenants onboarded and closed since the backup (from their runs); ' +
        '--apply records them closed, with their transfers as made',
    )
    .requiredOption('--since <time>', 'the time of the backup the records were restored from (ISO 8601)')
    .option('--apply', 'record them (closed, their transfers as made, nothing sent)')
    .option('--json', 'print JSON')
    .action(async (opts: { since: string; apply?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const body = { since: opts.since, ...(opts.apply ? { apply: true } : {}) };
        const outcome = await gateway.post<ClosedImport>('/v1/imports/closed', body);
        if (opts.json) printJson(outcome);
        else printClosed(outcome, opts.apply === true);
      }),
    );

  cmd
    .command('apply')
    .description('import every importable sub-account of a fresh plan (importTenant, id import:<ref>); idempotent')
    .option('--only <refs...>', 'import only these refs (each must be importable in the plan)')
    .option('--map <file>', 'CSV of subaccountId,externalRef for sub-accounts that carry no externalRef')
    .option(
      '--timeout <duration>',
      'stop waiting for the runs after this long (e.g. 10m): prints where each stands, exit 4; they go on',
    )
    .option('--json', 'print JSON')
    .action(async (opts: { only?: string[]; map?: string; timeout?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const start = (
          await gateway.call<ImportStart>('POST', '/v1/imports/apply', {
            body: { ...(await mapOf(opts.map)), ...(opts.only ? { only: opts.only } : {}) },
          })
        ).data;
        const { notStarted: _notStarted, ...rest } = start;
        const outcome: ApplyOutcome = { ...rest, results: await resultsOf(gateway, start) };
        const failed = outcome.results.filter((r) => !r.ok);
        if (failed.length) {
          const { EXIT_CODES } = await import('../poll-run.js');
          process.exitCode = EXIT_CODES.failed;
        }
        if (opts.json) return printJson(outcome);
        const imported = outcome.results.filter((r) => r.ok && r.outcome === 'imported').length;
        printLine(
          outcome.started.length
            ? `${imported} imported, ${outcome.results.length - imported - failed.length} ` +
                `already imported, ${failed.length} failed, ${outcome.skipped.length} skipped ` +
                `(conflicts)`
            : `nothing to import (${outcome.skipped.length} skipped for conflicts; \`tenantctl ` +
                `import plan\` shows why)`,
        );
        for (const r of outcome.results)
          printLine(
            r.ok
              ? `  ${r.outcome.padEnd(16)} ${r.externalRef} ${r.subaccountId} ${r.status} ` +
                  `unmanaged keys ${r.unmanagedKeys.length} opening balance ` +
                  `${r.openingBalanceMicroUsd ?? 'unknown'}`
              : `  failed           ${r.externalRef} ${r.subaccountId}: ${r.error}`,
          );
        for (const ref of outcome.alreadyImported) printLine(`  already imported ${ref}`);
      }),
    );
}
