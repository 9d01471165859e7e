import { eventCounts } from '../../client/record-counts.js';
import type { Queryable } from '../../client/records.js';
import { EVENT_TYPES } from '../../domain/events.js';
import { gaugeLines } from '../http/metrics.js';

/**
 * Events written and deliveries by type and outcome (pending, delivered, failed), read at scrape
 * time: `tpo_events_total{type}`, `tpo_event_deliveries{type,outcome}`. An alert on failed > 0 (or
 * pending growing) finds a receiver that is down.
 */
export async function eventMetricLines(db: Queryable): Promise<string[]> {
  const { events, deliveries } = await eventCounts(db);
  const byType = new Map(events.map((e) => [e.type, e.count]));
  const byTypeState = new Map(deliveries.map((d) => [`${d.type}|${d.state}`, d.count]));
  return [
    ...gaugeLines(
      'tpo_events_total',
      'Events written to the outbox, by type.',
      EVENT_TYPES.map((type) => ({ labels: { type }, value: byType.get(type) ?? 0 })),
    ),
    ...gaugeLines(
      'tpo_event_deliveries',
      'Event deliveries by type and outcome (pending, delivered, failed).',
      EVENT_TYPES.flatMap((type) =>
        (['pending', 'delivered', 'failed'] as const).map((outcome) => ({
          labels: { type, outcome },
          value: byTypeState.get(`${type}|${outcome}`) ?? 0,
        })),
      ),
    ),
  ];
}
