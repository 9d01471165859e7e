import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
interface JsonEvent {
  eventId: string;
  eventType: string;
  markerRecordedEventAttributes?: { markerName?: string };
  [attributes: string]: unknown;
}

const TASK_EVENTS = ['SCHEDULED', 'STARTED', 'COMPLETED'].map((s) => `EVENT_TYPE_WORKFLOW_TASK_${s}`);

/** Indexes of the local-activity markers that the same workflow task's next command follows. */
export function localActivityMarkersFollowedByCommands(history: History): number[] {
  const events = (JSON.parse(historyToJSON(history)) as { events: JsonEvent[] }).events;
  return events.flatMap((event, i) => {
    const next = events[i + 1];
    const isMarker = event.markerRecordedEventAttributes?.markerName === 'core_local_activity';
    const closes = next?.eventType.startsWith('EVENT_TYPE_WORKFLOW_EXECUTION_') ?? true;
    return isMarker && next && !TASK_EVENTS.includes(next.eventType) && !closes ? [i] : [];
  });
}

/**
 * The history as it is when a workflow task completed right after the local-activity marker at
 * `index`, before the code that follows the activity answered: Core's workflow task heartbeat (at 80%
 * of the task timeout, under load) completes the task with the marker it already recorded, and that
 * code's commands land in the next task. A copy of the task's three events is inserted after the
 * marker, and every event id and reference is renumbered.
 */
export function splitTaskAfter(history: History, index: number): History {
  const events = (JSON.parse(historyToJSON(history)) as { events: JsonEvent[] }).events;
  let lastCompleted = index;
  while (events[lastCompleted]!.eventType !== TASK_EVENTS[2]) lastCompleted -= 1;
  const task = structuredClone(events.slice(lastCompleted - 2, lastCompleted + 1));
  const out = [...events.slice(0, index + 1), ...task, ...events.slice(index + 1)];
  const renumbered = new Map<string, string>();
  out.forEach((event, i) => {
    if (!task.includes(event)) renumbered.set(event.eventId, String(i + 1));
  });
  const remap = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(remap);
    else if (value && typeof value === 'object')
      for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
        if (key.endsWith('EventId') && typeof field === 'string' && renumbered.has(field))
          (value as Record<string, unknown>)[key] = renumbered.get(field);
        else remap(field);
      }
  };
  for (const event of out) if (!task.includes(event)) remap(event);
  out.forEach((event, i) => (event.eventId = String(i + 1)));
  const [scheduled, started, completed] = task as [JsonEvent, JsonEvent, JsonEvent];
  (started['workflowTaskStartedEventAttributes'] as Record<string, string>)['scheduledEventId'] = scheduled.eventId;
  const done = completed['workflowTaskCompletedEventAttributes'] as Record<string, string>;
  done['scheduledEventId'] = scheduled.eventId;
  done['startedEventId'] = started.eventId;
  return historyFromJSON({ events: out });
}

/** Event types and marker names, in order: what a test asserts about a history's shape. */
export function eventNames(history: History): string[] {
  return (JSON.parse(historyToJSON(history)) as { events: JsonEvent[] }).events.map(
    (e) => e.markerRecordedEventAttributes?.markerName ?? e.eventType.replace('EVENT_TYPE_', ''),
  );
}
