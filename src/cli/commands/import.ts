import type { Command } from 'commander';
import type { CliRuntime } from '../runtime.js';
import type { ImportPlan, PlanRow } from '../../client/import-plan.js';
import { printJson, withRuntime } from '../run.js';

// Each action loads what it uses (see run.ts): `tenantctl --help` loads none of it.

/**
 * The plan's platform reads go through a client paced at a quarter of PLATFORM_RATE_LIMIT_PER_SECOND
 * (drift's lister, activities/drift/paced-fetch.ts): with the platform queue's own share the fleet's
 * budget holds while a plan runs beside rotations, drift checks and imports.
 */
async function planOf(runtime: CliRuntime, mapFile: string | undefined): Promise<ImportPlan> {
  const [{ ConfigError }, { createDriftListClient }, { buildImportPlan }, { loadRefMap }, { cliParentKeyOf }] =
    await Promise.all([
      import('../../config.js'),
      import('../../../activities/drift/paced-fetch.js'),
      import('../../client/import-plan.js'),
      import('../../client/import-map.js'),
      import('../../main/wiring/deps.js'),
    ]);
  // The mapping file is checked before any platform call or connection.
  const map = mapFile ? await loadRefMap(mapFile) : undefined;
  const { PLATFORM_BASE_URL, PLATFORM_TIMEOUT_MS, PLATFORM_RATE_LIMIT_PER_SECOND } = runtime.config;
  if (!PLATFORM_BASE_URL) throw new ConfigError(['PLATFORM_BASE_URL: is required to list sub-accounts']);
  // A plan writes nothing, not even the parent key's first import.
  const { platformKey, close } = await cliParentKeyOf(runtime.config, runtime.pool(), { readOnly: true });
  try {
    const platform = createDriftListClient({
      baseUrl: PLATFORM_BASE_URL,
      platformKey,
      timeoutMs: PLATFORM_TIMEOUT_MS,
      requestsPerSecond: PLATFORM_RATE_LIMIT_PER_SECOND,
    });
    return await buildImportPlan({ platform, db: runtime.pool() }, map ? { map } : {});
  } finally {
    await close();
  }
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
  console.log(
    `${plan.listed} live sub-account(s) listed, ${plan.recorded} already in our ` +
      `records, ${plan.rows.length} without a record: ${plan.importable} importable`,
  );
  for (const row of plan.rows) {
    console.log(rowLine(row));
    for (const c of row.conflicts) console.log(`       conflict ${c.code}: ${c.message}`);
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
      withRuntime(async (runtime) => {
        const plan = await planOf(runtime, opts.map);
        if (opts.json) printJson(plan);
        else printPlan(plan);
      }),
    );

  cmd
    .command('apply')
    .description('import every importable sub-account of a fresh plan (importTenant, id import:<ref>); idempotent')
    .option('--only <refs...>', 'import only these refs (each must be importable in the plan)')
    .option('--map <file>', 'CSV of subaccountId,externalRef for sub-accounts that carry no externalRef')
    .option('--operator <name>', 'who asks (audited)', 'tenantctl')
    .option('--json', 'print JSON')
    .action(async (opts: { only?: string[]; map?: string; operator: string; json?: boolean }) =>
      withRuntime(async (runtime) => {
        if (!/^[A-Za-z0-9._@:-]{1,100}$/.test(opts.operator)) {
          const { InvalidInputError } = await import('../../domain/tenant-input.js');
          throw new InvalidInputError(['--operator: must be 1-100 characters of A-Z a-z 0-9 . _ @ : -']);
        }
        const plan = await planOf(runtime, opts.map);
        const { applyImport } = await import('../../client/import-apply.js');
        const outcome = await applyImport({ client: await runtime.client(), db: runtime.pool() }, plan, {
          ...(opts.only ? { only: opts.only } : {}),
          requestedBy: opts.operator,
          taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
        });
        const failed = outcome.results.filter((r) => !r.ok);
        if (failed.length) process.exitCode = 1;
        if (opts.json) return printJson(outcome);
        const imported = outcome.results.filter((r) => r.ok && r.outcome === 'imported').length;
        console.log(
          outcome.started.length
            ? `${imported} imported, ${outcome.results.length - imported - failed.length} ` +
                `already imported, ${failed.length} failed, ${outcome.skipped.length} skipped ` +
                `(conflicts)`
            : `nothing to import (${outcome.skipped.length} skipped for conflicts; \`tenantctl ` +
                `import plan\` shows why)`,
        );
        for (const r of outcome.results)
          console.log(
            r.ok
              ? `  ${r.outcome.padEnd(16)} ${r.externalRef} ${r.subaccountId} ${r.status} ` +
                  `unmanaged keys ${r.unmanagedKeys.length} opening balance ` +
                  `${r.openingBalanceMicroUsd ?? 'unknown'}`
              : `  failed           ${r.externalRef} ${r.subaccountId}: ${r.error}`,
          );
        for (const ref of outcome.alreadyImported) console.log(`  already imported ${ref}`);
      }),
    );
}
