import type { Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { listImportedRefs } from '../../db/imports-store.js';
import type { Queryable } from '../../db/pool.js';
import { importWorkflowId } from '../../domain/ids.js';
import type { ImportTenantInput, ImportTenantResult } from '../../domain/import-input.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import { parseInput, tenantNameSchema } from '../../domain/tenant-input.js';
import { importTenantInputSchema } from '../../domain/import-input.js';
import type { importTenant } from '../../../workflows/import-tenant.js';
import { describeError } from '../describe-error.js';
import { ImportInputError } from './import-map.js';
import type { ImportPlan, PlanRow } from './import-plan.js';

/**
 * `tenantctl import apply` (through the gateway's POST /v1/imports/apply): one importTenant run per
 * importable row of a fresh plan (or of the rows `--only` names). Every `--only` ref is checked
 * against the plan before anything starts: a ref no importable sub-account carries is refused by
 * name, and nothing is started.
 */
export interface ApplyOutcome {
  started: Array<{ externalRef: string; subaccountId: string; workflowId: string }>;
  results: Array<
    | ({ ok: true; workflowId: string } & ImportTenantResult)
    | { ok: false; externalRef: string; subaccountId: string; workflowId: string; error: string }
  >;
  skipped: Array<{ subaccountId: string; externalRef: string | null; conflicts: string[] }>;
  alreadyImported: string[];
}

async function selectRows(db: Queryable, plan: ImportPlan, only: string[] | undefined) {
  if (!only?.length)
    return {
      rows: plan.rows.filter((r) => r.importable),
      skipped: plan.rows.filter((r) => !r.importable),
      alreadyImported: [],
    };
  const byRef = new Map<string, PlanRow[]>();
  for (const row of plan.rows)
    if (row.externalRef) byRef.set(row.externalRef, [...(byRef.get(row.externalRef) ?? []), row]);
  const imported = new Set(await listImportedRefs(db, only));
  const problems: string[] = [];
  const rows: PlanRow[] = [];
  for (const ref of new Set(only)) {
    const found = byRef.get(ref) ?? [];
    const importable = found.filter((r) => r.importable);
    if (importable.length === 1) rows.push(importable[0]!);
    else if (found.length)
      problems.push(`--only ${ref}: not importable (${found[0]!.conflicts.map((c) => c.message).join('; ')})`);
    else if (!imported.has(ref))
      problems.push(`--only ${ref}: no sub-account without a record carries this ref (see \`tenantctl import plan\`)`);
  }
  if (problems.length) throw new ImportInputError(problems);
  return { rows, skipped: [], alreadyImported: [...imported].filter((r) => only.includes(r)) };
}

/** The input of a row's run: the platform's name when it is one we can record, else the ref. */
function importInputOf(row: PlanRow, requestedBy: string): ImportTenantInput {
  const name = row.name !== null && tenantNameSchema.safeParse(row.name).success ? row.name : row.externalRef!;
  return parseInput(importTenantInputSchema, {
    externalRef: row.externalRef,
    subaccountId: row.subaccountId,
    name,
    refSource: row.refSource,
    requestedBy,
  });
}

/** The rows an apply takes (the importable ones of the plan, `only` if given) as run inputs, and what it skips. */
async function selectInputs(db: Queryable, plan: ImportPlan, options: { only?: string[]; requestedBy: string }) {
  const { rows, skipped, alreadyImported } = await selectRows(db, plan, options.only);
  return {
    inputs: rows.map((row) => importInputOf(row, options.requestedBy)),
    skipped: skipped.map((r) => ({
      subaccountId: r.subaccountId,
      externalRef: r.externalRef,
      conflicts: r.conflicts.map((c) => c.code),
    })),
    alreadyImported,
  };
}

/** Starts the runs and awaits each (scripts that hold a Temporal client; tenantctl goes through the gateway). */
export async function applyImport(
  deps: { client: Client; db: Queryable },
  plan: ImportPlan,
  options: { only?: string[]; requestedBy: string; taskQueue: string; concurrency?: number },
): Promise<ApplyOutcome> {
  const { inputs, skipped, alreadyImported } = await selectInputs(deps.db, plan, options);
  const outcome: ApplyOutcome = {
    started: [],
    results: [],
    skipped,
    alreadyImported,
  };
  let next = 0;
  const worker = async () => {
    while (next < inputs.length) {
      const input = inputs[next++]!;
      const workflowId = importWorkflowId(input.externalRef);
      outcome.started.push({ externalRef: input.externalRef, subaccountId: input.subaccountId, workflowId });
      try {
        const handle = await deps.client.workflow.start<typeof importTenant>('importTenant', {
          taskQueue: options.taskQueue,
          workflowId,
          args: [input],
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
          typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
        });
        outcome.results.push({ ok: true, workflowId, ...(await handle.result()) });
      } catch (error) {
        outcome.results.push({
          ok: false,
          externalRef: input.externalRef,
          subaccountId: input.subaccountId,
          workflowId,
          error: describeError(error),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 10, inputs.length) }, worker));
  outcome.results.sort((a, b) => a.externalRef.localeCompare(b.externalRef));
  return outcome;
}

/**
 * Starts one importTenant run per selected row (a second start joins the running or finished run: id
 * `import:<ref>`), without waiting: the gateway answers at once and the caller polls each run. A run
 * that could not be started is in `notStarted` with why.
 */
export interface ImportStart {
  started: ApplyOutcome['started'];
  notStarted: Array<{ externalRef: string; subaccountId: string; workflowId: string; error: string }>;
  skipped: ApplyOutcome['skipped'];
  alreadyImported: string[];
}

export async function startImports(
  deps: { client: Client; db: Queryable },
  plan: ImportPlan,
  options: { only?: string[]; requestedBy: string; taskQueue: string },
): Promise<ImportStart> {
  const { inputs, skipped, alreadyImported } = await selectInputs(deps.db, plan, options);
  const outcome: ImportStart = {
    started: [],
    notStarted: [],
    skipped,
    alreadyImported,
  };
  for (const input of inputs) {
    const workflowId = importWorkflowId(input.externalRef);
    const row = { externalRef: input.externalRef, subaccountId: input.subaccountId, workflowId };
    try {
      await deps.client.workflow.start<typeof importTenant>('importTenant', {
        taskQueue: options.taskQueue,
        workflowId,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef }]),
      });
      outcome.started.push(row);
    } catch (error) {
      outcome.notStarted.push({ ...row, error: describeError(error) });
    }
  }
  return outcome;
}
