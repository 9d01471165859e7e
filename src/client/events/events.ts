import { randomBytes } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { withTransaction, type Pool } from '../../db/pool.js';
import {
  addSecretGeneration,
  deleteSubscription,
  findLiveDuplicate,
  findSubscription,
  getSubscription,
  insertSubscription,
  listSubscriptions,
  SubscriptionNotFoundError,
  DuplicateSubscriptionError,
  type SubscriptionRow,
} from '../../db/event-subscriptions-store.js';
import { listDeliveries, reopenDeliveries, type DeliveryRow } from '../../db/event-deliveries-store.js';
import { eventIdOf, findEvent, parseEventId } from '../../db/events-store.js';
import {
  canonicalTypes,
  EVENTS_PENDING_SIGNAL,
  subscribeInputSchema,
  type DeliverEventStreamInput,
  type DispatchEventsInput,
  type StreamPolicy,
  type SubscribeInput,
} from '../../domain/events.js';
import { eventDispatcherWorkflowId, eventStreamWorkflowId } from '../../domain/ids.js';
import { subscriptionIdOf } from '../../domain/event-streams.js';
import { InvalidInputError, parseInput } from '../../domain/tenant-input.js';
import { generateWebhookSecret, subscriptionSecretAad } from '../../secrets/standard-webhooks.js';
import type { Vault } from '../../secrets/vault.js';
import type { AllowHosts } from '../../domain/outbound-rule.js';
import { outboundUrlProblemAfterDns, type Resolver } from '../../infra/outbound/resolve.js';
import { publicDeliveryError } from '../../domain/delivery-errors.js';

/**
 * Event subscriptions, deliveries and replays: the one implementation behind `tenantctl events …`
 * and the gateway's /v1/event-subscriptions routes.
 */
export { DuplicateSubscriptionError, SubscriptionNotFoundError };

export interface SubscriptionView {
  id: string;
  url: string;
  types: string[];
  label: string;
  status: string;
  createdBy: string;
  createdAt: string;
  secretGeneration: number;
  /** More than one during a secret rotation's overlap: deliveries then carry one signature per secret. */
  signingSecrets: number;
}

function viewOf(row: SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    url: row.url,
    types: row.types,
    label: row.label,
    status: row.status,
    createdBy: row.createdBy,
    createdAt: row.createdAt.toISOString(),
    secretGeneration: row.secretGeneration,
    signingSecrets: row.signingSecrets,
  };
}

export interface DeliveryView {
  id: string;
  subscriptionId: string;
  /** The event's id: the `webhook-id` of every delivery and replay of it. */
  eventId: string;
  type: string;
  tenant: string | null;
  seq: string;
  state: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  replays: number;
  occurredAt: string;
  deliveredAt: string | null;
  failedAt: string | null;
}

function deliveryViewOf(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    subscriptionId: row.subscriptionId,
    eventId: eventIdOf(row.eventId),
    type: row.type,
    tenant: row.stream || null,
    seq: row.seq,
    state: row.state,
    attempts: row.attempts,
    lastStatus: row.lastStatus,
    lastError: publicDeliveryError(row.lastStatus, row.lastError),
    replays: row.replays,
    occurredAt: row.occurredAt.toISOString(),
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    failedAt: row.failedAt?.toISOString() ?? null,
  };
}

/**
 * Validates everything before writing anything: a bad URL (a host name resolving inward included), an
 * unknown type, an empty list or a duplicate of a live subscription is one clear error and no row. The
 * secret is returned here once (the receiver needs it); it is stored sealed only.
 */
export async function subscribeToEvents(
  deps: {
    pool: Pool;
    vault: Vault;
    /** OUTBOUND_ALLOW_HOSTS (absent: none, public https hosts only). */
    allowHosts?: AllowHosts;
    /** DNS for the URL's host name (absent: the system resolver). */
    resolve?: Resolver | undefined;
  },
  raw: SubscribeInput,
  createdBy: string,
): Promise<{ subscription: SubscriptionView; secret: string }> {
  const input = parseInput(subscribeInputSchema, raw);
  const urlProblem = await outboundUrlProblemAfterDns(input.url, deps.allowHosts ?? [], { resolve: deps.resolve });
  if (urlProblem) throw new InvalidInputError([`url: ${urlProblem}`]);
  const types = canonicalTypes(input.types);
  const existing = await findLiveDuplicate(deps.pool, input.url, types);
  if (existing) throw new DuplicateSubscriptionError(existing);
  const id = subscriptionIdOf(randomBytes(9).toString('base64url').replace(/[-_]/g, 'x'));
  const secret = generateWebhookSecret();
  const sealed = deps.vault.seal(secret, subscriptionSecretAad({ subscriptionId: id, generation: 1 }));
  const row = await withTransaction(deps.pool, (tx) =>
    insertSubscription(tx, { id, url: input.url, types, label: input.label, createdBy, sealed }),
  );
  return { subscription: viewOf(row), secret };
}

/**
 * `owner`: the caller's name when it may act on its own subscriptions only (the gateway's roles);
 * another caller's subscription is then answered as if it did not exist. Absent: every subscription.
 */
export async function listEventSubscriptions(
  pool: Pool,
  includeDeleted = false,
  owner?: string,
): Promise<SubscriptionView[]> {
  return (await listSubscriptions(pool, { includeDeleted, ...(owner ? { createdBy: owner } : {}) })).map(viewOf);
}

async function assertOwned(pool: Pool, id: string, owner: string | undefined): Promise<void> {
  if (owner === undefined) return;
  const row = await findSubscription(pool, id);
  if (!row || row.createdBy !== owner) throw new SubscriptionNotFoundError(id);
}

/**
 * A subscription a caller names (a replay's or a delivery list's filter): it exists (and is live, with `live`)
 * and, with `owner`, is theirs; anything else is SubscriptionNotFoundError, so another caller's is answered
 * exactly as one that does not exist, and nothing is done under its name.
 */
async function assertNamedSubscription(
  pool: Pool,
  id: string,
  scope: { owner?: string | undefined; live?: boolean },
): Promise<void> {
  const row = await findSubscription(pool, id);
  if (!row || (scope.live && row.status !== 'active') || (scope.owner !== undefined && row.createdBy !== scope.owner))
    throw new SubscriptionNotFoundError(id);
}

export async function deleteEventSubscription(pool: Pool, id: string, owner?: string): Promise<SubscriptionView> {
  await assertOwned(pool, id, owner);
  const deleted = await withTransaction(pool, (tx) => deleteSubscription(tx, id));
  if (!deleted) throw new SubscriptionNotFoundError(id);
  return viewOf(await getSubscription(pool, id));
}

/**
 * A new signing secret; the old one keeps signing for `overlapSeconds`, so every delivery in that
 * window carries both signatures and the receiver can switch at leisure.
 */
export async function rotateSubscriptionSecret(
  deps: { pool: Pool; vault: Vault },
  id: string,
  overlapSeconds: number,
  owner?: string,
): Promise<{ subscription: SubscriptionView; secret: string; previousValidUntil: string }> {
  await assertOwned(deps.pool, id, owner);
  if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > 30 * 86_400)
    throw new InvalidInputError(['overlap: must be a whole number of seconds from 0 to 2592000 (30 days)']);
  const secret = generateWebhookSecret();
  await withTransaction(deps.pool, (tx) =>
    addSecretGeneration(tx, id, overlapSeconds, (generation) =>
      deps.vault.seal(secret, subscriptionSecretAad({ subscriptionId: id, generation })),
    ),
  );
  return {
    subscription: viewOf(await getSubscription(deps.pool, id)),
    secret,
    previousValidUntil: new Date(Date.now() + overlapSeconds * 1000).toISOString(),
  };
}

export async function listEventDeliveries(
  pool: Pool,
  filter: { failedOnly?: boolean; subscriptionId?: string; eventId?: string; limit?: number; owner?: string } = {},
): Promise<DeliveryView[]> {
  let eventId: string | undefined;
  if (filter.eventId !== undefined) {
    eventId = parseEventId(filter.eventId);
    if (!eventId) throw new InvalidInputError(['event: must be an event id like evt_123']);
  }
  if (filter.subscriptionId) await assertNamedSubscription(pool, filter.subscriptionId, { owner: filter.owner });
  const rows = await listDeliveries(pool, {
    ...(filter.failedOnly ? { state: 'failed' as const } : {}),
    ...(filter.subscriptionId ? { subscriptionId: filter.subscriptionId } : {}),
    ...(eventId ? { eventId } : {}),
    ...(filter.limit ? { limit: filter.limit } : {}),
    ...(filter.owner ? { createdBy: filter.owner } : {}),
  });
  return rows.map(deliveryViewOf);
}

export class EventNotFoundError extends Error {
  override name = 'EventNotFoundError';
}

/**
 * Sends an event again (same body, same `webhook-id`: receivers that keep ids dedupe it), or every
 * event since a time: their deliveries go back to pending and their streams are woken.
 */
export async function replayEvents(
  deps: { pool: Pool; client: Client; taskQueue: string },
  target: { eventId: string } | { since: string },
  options: { subscriptionId?: string; policy?: StreamPolicy; owner?: string } = {},
): Promise<{ reopened: number }> {
  let filter: { eventId?: string; since?: Date };
  if ('eventId' in target) {
    const id = parseEventId(target.eventId);
    if (!id) throw new InvalidInputError(['event: must be an event id like evt_123']);
    filter = { eventId: id };
  } else {
    const since = new Date(target.since);
    if (!/^\d{4}-\d{2}-\d{2}/.test(target.since) || Number.isNaN(since.getTime()))
      throw new InvalidInputError(['since: must be an ISO 8601 time like 2026-01-31T12:00:00Z']);
    filter = { since };
  }
  // A subscription named is one of the caller's live ones (any live one for an admin), or nothing is replayed.
  if (options.subscriptionId)
    await assertNamedSubscription(deps.pool, options.subscriptionId, { owner: options.owner, live: true });
  if (filter.eventId && !(await findEvent(deps.pool, filter.eventId)))
    throw new EventNotFoundError(`no event ${eventIdOf(filter.eventId)}`);
  const { reopened, streams } = await reopenDeliveries(deps.pool, {
    ...filter,
    ...(options.subscriptionId ? { subscriptionId: options.subscriptionId } : {}),
    ...(options.owner ? { createdBy: options.owner } : {}),
  });
  for (const stream of streams) await wakeStream(deps, stream, options.policy);
  return { reopened };
}

async function wakeStream(
  deps: { client: Client; taskQueue: string },
  stream: { subscriptionId: string; stream: string },
  policy: StreamPolicy | undefined,
): Promise<void> {
  const input: DeliverEventStreamInput = { ...stream, ...(policy ? { policy } : {}) };
  await deps.client.workflow.signalWithStart('deliverEventStream', {
    taskQueue: deps.taskQueue,
    workflowId: eventStreamWorkflowId(stream.subscriptionId, stream.stream),
    args: [input],
    signal: EVENTS_PENDING_SIGNAL,
    signalArgs: [],
  });
}

/** Starts this task queue's event dispatcher unless it runs (the worker calls it at start). */
export async function ensureEventDispatcher(
  client: Client,
  taskQueue: string,
  input: DispatchEventsInput = {},
): Promise<void> {
  try {
    await client.workflow.start('dispatchEvents', {
      taskQueue,
      workflowId: eventDispatcherWorkflowId(taskQueue),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}
