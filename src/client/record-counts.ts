import { countOpenFindingsByKind } from '../db/drift-findings-store.js';
import { countDeliveriesByTypeAndState, countEventsByType } from '../db/event-deliveries-store.js';
import type { Queryable } from '../db/pool.js';

/** What the gateway's `/metrics` counts in the records: open drift findings, events and their deliveries. */
export const openDriftFindingCounts = countOpenFindingsByKind;

export async function eventCounts(db: Queryable) {
  const [events, deliveries] = await Promise.all([countEventsByType(db), countDeliveriesByTypeAndState(db)]);
  return { events, deliveries };
}
