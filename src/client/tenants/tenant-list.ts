import type { Client } from '@temporalio/client';
import type { Pool } from '../../db/pool.js';
import { listMoneyHeldRefs, listTenants, listTenantsByRefs, type TenantRow } from '../../db/tenants-store.js';
import type { PlanRef } from '../../domain/plan-ref.js';
import { findAttention, moneyHoldItem, type AttentionItem } from './attention.js';

/**
 * A tenant as `tenantctl list` and `GET /v1/tenants` show it: its records, its plan version, what waits for a person.
 */
export interface TenantListRow {
  externalRef: string;
  name: string;
  status: string;
  subaccountId: string | null;
  createdAt: string;
  /** The plan version it is on (null: none). */
  plan: PlanRef | null;
  /** What of it waits for a person (src/domain/attention.ts); empty when nothing does. */
  attention: AttentionItem[];
}

/**
 * A page of our tenants by external ref, each marked with what waits for a person; with `attention`, only the
 * tenants something waits on a person for (found in Temporal's visibility first, then paged by ref).
 */
export async function listTenantRows(
  deps: { pool: Pool; client: Client },
  query: { limit: number; after?: string; attention: boolean },
): Promise<TenantListRow[]> {
  const page = { limit: query.limit, ...(query.after !== undefined ? { after: query.after } : {}) };
  let rows: TenantRow[];
  let attention: Map<string, AttentionItem[]>;
  if (query.attention) {
    attention = await findAttention(deps.client, (refs) => listTenantsByRefs(deps.pool, refs));
    const held = await listMoneyHeldRefs(deps.pool);
    rows = await listTenantsByRefs(deps.pool, [...new Set([...attention.keys(), ...held])], page);
  } else {
    const listed = await listTenants(deps.pool, page);
    // What waits for a person anywhere, kept for the tenants of this page (none listed: Temporal is not asked).
    attention =
      listed.length === 0
        ? new Map()
        : await findAttention(deps.client, async (found) => listed.filter((t) => found.includes(t.externalRef)));
    rows = listed;
  }
  return rows.map((t) => ({
    externalRef: t.externalRef,
    name: t.name,
    status: t.status,
    subaccountId: t.subaccountId,
    createdAt: t.createdAt.toISOString(),
    plan: t.planName !== null && t.planVersion !== null ? { name: t.planName, version: t.planVersion } : null,
    attention: [...(attention.get(t.externalRef) ?? []), ...moneyHoldItem(t)],
  }));
}
