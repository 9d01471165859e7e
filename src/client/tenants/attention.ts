import type { Client } from '@temporalio/client';
import { heldConvergencesQuery, openPersonWaitsQuery, waitsForPerson } from '../../domain/attention.js';
import { tenantExternalRefKey, tenantStatusKey } from '../../domain/search-attributes.js';
import type { TenantRow } from '../../db/tenants-store.js';
import { currentWaitQuery } from '../../../workflows/waits-messages.js';
import type { WaitView } from '../current-wait.js';
import { formatWait } from '../wait-lines.js';
import { queryAnswer } from '../query-run.js';
import { runReader, tenantPlanSection, type TenantPlanSection } from '../plans/tenant-plan.js';

/**
 * What of a tenant waits for a person (issue 47; the rule: src/domain/attention.ts), for `tenantctl list`,
 * `GET /v1/tenants` (`?attention=true`: only those) and the tenant view.
 *
 * How the list finds them without reading every tenant's runs: two visibility queries over the whole namespace,
 * whatever the fleet's size. Open runs whose TenantStatus search attribute is a wait only a person ends (each
 * workflow sets it when a wait starts and ends), each then asked its current wait, so the words are the ones
 * `--wait` prints and an attribute a run left behind is not taken for a wait; and plan convergences that ended
 * held (TenantStatus `plan:held`), each kept only while it is its tenant's latest convergence and the tenant is
 * still not on the version. Both sets are small (what waits for a person), so the runs read after them are few.
 */
export interface AttentionItem {
  /** The run that waits, or the convergence that ended held; `money-hold:<ref>` for a restore's hold on new money. */
  workflowId: string;
  /** The wait's stage, `held` for a tenant held off a plan version, or `money_held` (new top-ups held). */
  stage: string;
  /** What waits: the run's current wait as `--wait` prints it, or what holds the tenant. */
  lines: string[];
  /** What ends it: the decisions that apply (Update names), or the hold's way out. */
  wayOut: string[];
}

function waitItem(workflowId: string, wait: WaitView): AttentionItem {
  return { workflowId, stage: wait.stage, lines: [formatWait(wait)], wayOut: [...wait.decisions] };
}

function holdItem(plan: TenantPlanSection): AttentionItem[] {
  const c = plan.convergence;
  return c?.hold ? [{ workflowId: c.workflowId, stage: 'held', lines: c.hold.holds, wayOut: c.hold.wayOut }] : [];
}

/**
 * A tenant whose new top-ups are held after a restore of the records (migrations/0021): a person runs the drift check
 * that records what the restore lost (docs/operations.md, "Restoring Postgres from a backup").
 */
export function moneyHoldItem(
  tenant: Pick<TenantRow, 'externalRef' | 'moneyHeldSince' | 'moneyHoldReason'>,
): AttentionItem[] {
  if (!tenant.moneyHeldSince) return [];
  return [
    {
      workflowId: `money-hold:${tenant.externalRef}`,
      stage: 'money_held',
      lines: [
        `new top-ups held since ${tenant.moneyHeldSince.toISOString()}: its records were restored from a backup ` +
          `(${tenant.moneyHoldReason ?? 'found'})`,
      ],
      wayOut: [`tenantctl drift check ${tenant.externalRef}`],
    },
  ];
}

/** The tenant view's attention: its runs waiting for a person, a plan hold, and a restore's hold on new money. */
export function attentionOf(
  runs: ReadonlyArray<{ workflowId: string; waiting: WaitView | null }>,
  plan: TenantPlanSection,
  tenant: Pick<TenantRow, 'externalRef' | 'moneyHeldSince' | 'moneyHoldReason'>,
): AttentionItem[] {
  const waiting = runs
    .filter((run) => waitsForPerson(run.waiting))
    .map((run) => waitItem(run.workflowId, run.waiting!));
  return [...waiting, ...holdItem(plan), ...moneyHoldItem(tenant)];
}

/** Runs read per query at most: what waits for a person is few, and a list shows what it found. */
const MOST = 1000;

/**
 * Every tenant with something waiting for a person, by external ref. `tenants` gives the records of the refs
 * that matter (the page being listed, or the refs found, when listing only those); a ref with no record is left out.
 */
export async function findAttention(
  client: Client,
  tenants: (refs: string[]) => Promise<TenantRow[]>,
): Promise<Map<string, AttentionItem[]>> {
  const [open, held] = await Promise.all([
    listed(client, openPersonWaitsQuery()),
    listed(client, heldConvergencesQuery()),
  ]);
  const rows = new Map(
    (await tenants([...new Set([...open, ...held].map((run) => run.ref))])).map((t) => [t.externalRef, t]),
  );
  const found = new Map<string, AttentionItem[]>();
  const add = (ref: string, items: AttentionItem[]) => {
    if (items.length > 0) found.set(ref, [...(found.get(ref) ?? []), ...items]);
  };
  const waits = await Promise.all(
    open
      .filter((run) => rows.has(run.ref))
      .map(async (run) => ({
        run,
        answer: await queryAnswer(client.workflow.getHandle(run.workflowId), currentWaitQuery),
      })),
  );
  for (const { run, answer } of waits) {
    if (!answer.answered)
      add(run.ref, [
        {
          workflowId: run.workflowId,
          stage: run.tenantStatus,
          lines: [`${run.type} shows TenantStatus ${run.tenantStatus} (no worker answered for its current wait)`],
          wayOut: [],
        },
      ]);
    else if (waitsForPerson(answer.value)) add(run.ref, [waitItem(run.workflowId, answer.value!)]);
  }
  const heldRefs = [...new Set(held.map((run) => run.ref))].filter((ref) => rows.has(ref));
  const plans = await Promise.all(
    heldRefs.map(async (ref) => {
      const row = rows.get(ref)!;
      const plan =
        row.planName !== null && row.planVersion !== null ? { name: row.planName, version: row.planVersion } : null;
      return {
        ref,
        section: await tenantPlanSection(client, { externalRef: ref, status: row.status, plan }, runReader(client)),
      };
    }),
  );
  for (const { ref, section } of plans) add(ref, holdItem(section));
  return found;
}

interface ListedRun {
  ref: string;
  workflowId: string;
  type: string;
  tenantStatus: string;
}

async function listed(client: Client, query: string): Promise<ListedRun[]> {
  const runs: ListedRun[] = [];
  for await (const run of client.workflow.list({ query, pageSize: 200 })) {
    const ref = run.typedSearchAttributes.get(tenantExternalRefKey);
    if (ref)
      runs.push({
        ref,
        workflowId: run.workflowId,
        type: run.type,
        tenantStatus: run.typedSearchAttributes.get(tenantStatusKey) ?? '',
      });
    if (runs.length >= MOST) break;
  }
  return runs;
}
