import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { invariant, TOKEN_PATTERN, type InvariantResult } from './invariant.js';

/**
 * What Temporal holds: every run of the task queue (visibility), the live state of the ones still
 * running (queries), and every history, decoded with the payload codec and searched for tokens.
 */
const STATUS_QUERY: Record<string, string> = {
  onboardTenant: 'onboardingStatus',
  rotateTenantKey: 'rotationStatus',
  closeTenant: 'closeStatus',
  dispatchEvents: 'eventDispatcherStatus',
  deliverEventStream: 'eventStreamStatus',
};

export interface TemporalFindings {
  runs: WorkflowExecutionInfo[];
  /** Why each run that is not completed is where it is, by `workflowId/runId`. */
  reasons: Map<string, string>;
  results: InvariantResult[];
  /**
   * Worker identities (`pid@host`) that completed workflow tasks: more than one when several processes shared the work.
   */
  workerIdentities: string[];
}

export async function listRuns(client: Client, taskQueue: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) runs.push(run);
  return runs;
}

export async function checkTemporal(client: Client, codec: PayloadCodec, taskQueue: string): Promise<TemporalFindings> {
  const runs = await listRuns(client, taskQueue);
  const stuck = invariant('no run stuck without a visible reason');
  const histories = invariant('no token in any workflow history');
  const reasons = new Map<string, string>();
  const identities = new Set<string>();

  await forEachLimited(runs, 8, async (run) => {
    const id = `${run.workflowId}/${run.runId}`;
    const handle = client.workflow.getHandle(run.workflowId, run.runId);
    const history = await handle.fetchHistory();
    const text = await decodedJson(history, codec);
    histories.checked += 1;
    if (TOKEN_PATTERN.test(text)) histories.violations.push(`${id}: a tenant token appears in the decoded history`);
    const events =
      (JSON.parse(text) as { events?: Array<{ workflowTaskCompletedEventAttributes?: { identity?: string } }> })
        .events ?? [];
    for (const event of events)
      if (event.workflowTaskCompletedEventAttributes?.identity)
        identities.add(event.workflowTaskCompletedEventAttributes.identity);

    if (run.status.name === 'COMPLETED') return;
    stuck.checked += 1;
    if (run.status.name === 'RUNNING') {
      const reason = await liveReason(client, run).catch(
        (error: unknown) => `query failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      reasons.set(id, reason);
      if (!reason.startsWith('stage ') || reason.includes('query failed'))
        stuck.violations.push(`${id} (${run.type}) is running without a visible reason: ${reason}`);
      return;
    }
    const reason = closeReason(JSON.parse(text) as { events?: Array<Record<string, unknown>> });
    reasons.set(id, `${run.status.name}: ${reason ?? 'no reason'}`);
    if (!reason) stuck.violations.push(`${id} (${run.type}) ended ${run.status.name} without a reason in its history`);
  });
  return { runs, reasons, results: [stuck, histories], workerIdentities: [...identities].sort() };
}

/** A running run explains itself by its status query (stage, waitingFor) and its current details. */
async function liveReason(client: Client, run: WorkflowExecutionInfo): Promise<string> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  const queryName = STATUS_QUERY[run.type];
  const status = queryName ? await handle.query<{ stage?: string; waitingFor?: string | null }>(queryName) : undefined;
  if (!status?.stage || !metadata.currentDetails)
    return (
      `no stage or current details (stage ${status?.stage ?? 'none'}, details ` +
      `${metadata.currentDetails ? 'set' : 'empty'})`
    );
  return `stage ${status.stage}${status.waitingFor ? `, waiting: ${status.waitingFor}` : ''}`;
}

/** The failure message, termination reason or cancel request that ended a run. */
function closeReason(history: { events?: Array<Record<string, unknown>> }): string | null {
  const events = history.events ?? [];
  const last = events[events.length - 1] ?? {};
  const failed = last.workflowExecutionFailedEventAttributes as { failure?: { message?: string } } | undefined;
  if (failed?.failure?.message) return failed.failure.message;
  const terminated = last.workflowExecutionTerminatedEventAttributes as { reason?: string } | undefined;
  if (terminated) return `terminated: ${terminated.reason || 'no reason given'}`;
  if (last.workflowExecutionCanceledEventAttributes) {
    const request = events.find((e) => e.workflowExecutionCancelRequestedEventAttributes)
      ?.workflowExecutionCancelRequestedEventAttributes as { identity?: string; cause?: string } | undefined;
    return request ? `cancelled on request${request.cause ? ` (${request.cause})` : ''}` : null;
  }
  if (last.workflowExecutionTimedOutEventAttributes) return 'timed out';
  if (last.workflowExecutionContinuedAsNewEventAttributes) return 'continued as new';
  return null;
}

/** The history as JSON text with every payload decoded (the codec encrypts them all). */
export async function decodedJson(value: unknown, codec: PayloadCodec): Promise<string> {
  const decoded = await decodeDeep(value, codec);
  return JSON.stringify(decoded, (_key, v: unknown) =>
    v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : typeof v === 'bigint' ? v.toString() : v,
  );
}

async function decodeDeep(value: unknown, codec: PayloadCodec): Promise<unknown> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return Promise.all(value.map((v) => decodeDeep(v, codec)));
  if (isPayload(value)) return (await codec.decode([value]))[0];
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = await decodeDeep(v, codec);
  // Long ids (int64) are objects with a toString; keep them readable.
  if (typeof (value as { toNumber?: unknown }).toNumber === 'function') return String(value);
  return out;
}

function isPayload(value: object): value is Payload {
  const metadata = (value as { metadata?: unknown }).metadata;
  return (
    metadata !== null &&
    typeof metadata === 'object' &&
    'encoding' in metadata &&
    (metadata as Record<string, unknown>).encoding instanceof Uint8Array
  );
}

export async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}
