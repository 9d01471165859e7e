import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  deleteEventSubscription,
  listEventDeliveries,
  listEventSubscriptions,
  replayEvents,
  rotateSubscriptionSecret,
  subscribeToEvents,
} from '../../client/events/events.js';
import type { Pool } from '../../client/records.js';
import { setLowBalanceAlert } from '../../client/money/wallet-alerts.js';
import { lowBalanceBodySchema } from '../../domain/low-balance-input.js';
import { InvalidInputError, parseInput } from '../../domain/tenant-input.js';
import { SUBSCRIPTION_ID_RULE } from '../../domain/event-streams.js';
import type { Vault } from '../../secrets/vault.js';
import type { AllowHosts } from '../../domain/outbound-rule.js';
import type { Resolver } from '../../infra/outbound/resolve.js';
import { callerOf, ownerScopeOf } from '../http/access.js';
import { invalidInput, sendData } from '../http/errors.js';
import { subscribeInputSchema } from '../../domain/events.js';
import { anyArray, anyObject, doc, externalRefParam } from '../http/api-docs.js';
import { refOf } from '../http/request-input.js';

/**
 * Event subscriptions for the parent's systems (bearer-authenticated like every /v1 route):
 * subscribe (the signing secret is in this one answer), list, delete, rotate-secret, deliveries,
 * and replay of an event or of everything since a time. A subscription belongs to the identity that
 * made it: other callers see none of it (404) unless their role has `resources.any` (admins).
 */
export async function eventRoutes(
  api: FastifyInstance,
  deps: {
    pool: Pool;
    vault: Vault;
    client: Client;
    taskQueue: string;
    allowHosts: AllowHosts;
    /** DNS for a subscription URL's host name (absent: the system resolver). */
    resolve?: Resolver | undefined;
    /** EVENTS_RETRY_FOR and EVENTS_SECRET_OVERLAP_SECONDS of this server. */
    policy: { retryFor: string; secretOverlapSeconds: number };
  },
): Promise<void> {
  const flagOf = (value: unknown, field: string) => {
    if (value === undefined || value === 'false') return false;
    if (value === 'true') return true;
    throw invalidInput(new InvalidInputError([`${field}: must be true or false`]));
  };
  const idOf = (params: unknown) => String((params as { id?: unknown }).id ?? '');
  const body = (value: unknown) => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});

  api.post(
    '/event-subscriptions',
    { config: { permission: 'events.manage' }, schema: subscribeDoc },
    async (request, reply) => {
      const input = body(request.body);
      const result = await subscribeToEvents(deps, input as never, callerOf(request).name);
      return sendData(reply, 201, result);
    },
  );
  api.get(
    '/event-subscriptions',
    { config: { permission: 'events.manage' }, schema: listSubscriptionsDoc },
    async (request, reply) => {
      const all = flagOf((request.query as { all?: unknown }).all, 'all');
      return sendData(reply, 200, await listEventSubscriptions(deps.pool, all, ownerScopeOf(request)));
    },
  );
  api.delete(
    '/event-subscriptions/:id',
    { config: { permission: 'events.manage' }, schema: deleteSubscriptionDoc },
    async (request, reply) =>
      sendData(reply, 200, await deleteEventSubscription(deps.pool, idOf(request.params), ownerScopeOf(request))),
  );
  api.post(
    '/event-subscriptions/:id/rotate-secret',
    { config: { permission: 'events.manage' }, schema: rotateSubscriptionSecretDoc },
    async (request, reply) => {
      const overlap = body(request.body)['overlapSeconds'] ?? deps.policy.secretOverlapSeconds;
      const result = await rotateSubscriptionSecret(
        { pool: deps.pool, vault: deps.vault },
        idOf(request.params),
        overlap as number,
        ownerScopeOf(request),
      );
      return sendData(reply, 200, result);
    },
  );
  api.get(
    '/event-deliveries',
    { config: { permission: 'events.manage' }, schema: deliveriesDoc },
    async (request, reply) => {
      const query = request.query as { failed?: string; subscription?: string; event?: string; limit?: string };
      const limit = query.limit === undefined ? undefined : Number(query.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 1000))
        throw invalidInput(new InvalidInputError(['limit: must be a whole number from 1 to 1000']));
      const views = await listEventDeliveries(deps.pool, {
        failedOnly: query.failed === 'true',
        ...(limit !== undefined ? { limit } : {}),
        ...(query.subscription ? { subscriptionId: query.subscription } : {}),
        ...(query.event ? { eventId: query.event } : {}),
        ...(ownerScopeOf(request) ? { owner: ownerScopeOf(request)! } : {}),
      });
      return sendData(reply, 200, views);
    },
  );
  // A replay reopens only the caller's own subscriptions' deliveries (all of them for an admin).
  // `subscriptionId` (optional) narrows it to one of them; the retry policy is this server's.
  const replay = (target: { eventId: string } | { since: string }, request: FastifyRequest) => {
    const owner = ownerScopeOf(request);
    const subscriptionId = body(request.body)['subscriptionId'];
    if (subscriptionId !== undefined && typeof subscriptionId !== 'string')
      throw invalidInput(new InvalidInputError([`subscriptionId: must be ${SUBSCRIPTION_ID_RULE}`]));
    return replayEvents({ pool: deps.pool, client: deps.client, taskQueue: deps.taskQueue }, target, {
      ...(owner ? { owner } : {}),
      ...(subscriptionId ? { subscriptionId } : {}),
      policy: { retryFor: deps.policy.retryFor },
    });
  };
  api.post(
    '/events/:id/replay',
    { config: { permission: 'events.manage' }, schema: replayEventDoc },
    async (request, reply) => sendData(reply, 202, await replay({ eventId: idOf(request.params) }, request)),
  );
  api.post(
    '/events/replay',
    { config: { permission: 'events.manage' }, schema: replaySinceDoc },
    async (request, reply) => {
      const since = body(request.body)['since'];
      if (typeof since !== 'string')
        throw invalidInput(new InvalidInputError(['since: is required (an ISO 8601 time)']));
      return sendData(reply, 202, await replay({ since }, request));
    },
  );

  // A tenant's own wallet.low_balance threshold. It is the tenant's setting, like its auto top-up
  // policy's `below`, and every subscriber's events follow it: funds.policy, not events.manage
  // (which covers only the caller's own subscriptions).
  const lowBalanceUrl = '/tenants/:externalRef/low-balance';
  api.put(
    lowBalanceUrl,
    { config: { permission: 'funds.policy' }, schema: setLowBalanceDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const input = parseInput(lowBalanceBodySchema, request.body ?? {});
      await setLowBalanceAlert(deps.pool, externalRef, input.belowMicroUsd);
      return sendData(reply, 200, { externalRef, belowMicroUsd: input.belowMicroUsd });
    },
  );
  api.delete(
    lowBalanceUrl,
    { config: { permission: 'funds.policy' }, schema: clearLowBalanceDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      await setLowBalanceAlert(deps.pool, externalRef, null);
      return sendData(reply, 200, { externalRef, belowMicroUsd: null });
    },
  );
}

const subscriptionParam = { id: { type: 'string', description: 'A subscription id (esub_…; older ones sub_…).' } };
const notTheirs = "No subscription with this id that is the caller's (SUBSCRIPTION_NOT_FOUND).";
const subscriptionIdField = {
  type: 'string',
  description: "Narrow the replay to one of the caller's live subscriptions (another's is answered 404).",
};

const subscribeDoc = doc({
  summary: 'Subscribe a URL to event types (signed Standard Webhooks deliveries); the caller owns it',
  description: 'The signing secret is in this answer only.',
  body: subscribeInputSchema,
  answers: {
    201: { description: 'The subscription, with its secret once.', data: anyObject },
    409: 'The same URL and types are subscribed already (SUBSCRIPTION_DUPLICATE).',
  },
});

const listSubscriptionsDoc = doc({
  summary: "Event subscriptions (the caller's; an admin's: everyone's); `all=true` includes deleted ones",
  query: { all: { type: 'string', enum: ['true', 'false'] } },
  answers: { 200: { description: 'The subscriptions.', data: anyArray }, 400: 'all: must be true or false.' },
});

const deleteSubscriptionDoc = doc({
  summary: 'Delete an event subscription',
  params: subscriptionParam,
  answers: { 200: { description: 'Deleted.', data: anyObject }, 404: notTheirs },
});

const rotateSubscriptionSecretDoc = doc({
  summary: "Rotate a subscription's signing secret; the old one keeps signing for an overlap",
  params: subscriptionParam,
  body: {
    type: 'object',
    properties: {
      overlapSeconds: {
        type: 'integer',
        minimum: 0,
        description: "How long both secrets sign (default: the server's EVENTS_SECRET_OVERLAP_SECONDS).",
      },
    },
  },
  bodyOptional: true,
  answers: { 200: { description: 'The new secret, once.', data: anyObject }, 404: notTheirs },
});

const deliveriesDoc = doc({
  summary: "Event deliveries of the caller's subscriptions (an admin's: all)",
  query: {
    failed: { type: 'string', enum: ['true', 'false'] },
    subscription: { type: 'string' },
    event: { type: 'string' },
    limit: { type: 'string', pattern: '^[0-9]+$', description: '1-1000.' },
  },
  answers: {
    200: { description: 'The deliveries.', data: anyArray },
    400: 'limit breaks its rule (INVALID_INPUT).',
    404: `\`subscription\` names no subscription of the caller's (SUBSCRIPTION_NOT_FOUND).`,
  },
});

const replayEventDoc = doc({
  summary: "Deliver one event again to the caller's subscriptions",
  params: { id: { type: 'string' } },
  body: { type: 'object', properties: { subscriptionId: subscriptionIdField } },
  bodyOptional: true,
  answers: {
    202: { description: 'The deliveries reopened.', data: anyObject },
    404:
      'No event with this id (EVENT_NOT_FOUND), or `subscriptionId` names no live subscription of the ' +
      "caller's (SUBSCRIPTION_NOT_FOUND).",
  },
});

const replaySinceDoc = doc({
  summary: "Deliver every event since a time again to the caller's subscriptions",
  body: {
    type: 'object',
    required: ['since'],
    properties: { since: { type: 'string', description: 'An ISO 8601 time.' }, subscriptionId: subscriptionIdField },
  },
  answers: {
    202: { description: 'The deliveries reopened.', data: anyObject },
    404: "`subscriptionId` names no live subscription of the caller's (SUBSCRIPTION_NOT_FOUND).",
  },
});

const lowBalanceData = {
  type: 'object',
  required: ['externalRef', 'belowMicroUsd'],
  properties: { externalRef: { type: 'string' }, belowMicroUsd: { type: ['string', 'null'] } },
};

const setLowBalanceDoc = doc({
  summary: "Set the tenant's wallet.low_balance threshold (every subscriber's events follow it)",
  params: externalRefParam,
  body: lowBalanceBodySchema,
  answers: {
    200: { description: 'The threshold.', data: lowBalanceData },
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
  },
});

const clearLowBalanceDoc = doc({
  summary: "Clear the tenant's wallet.low_balance threshold",
  params: externalRefParam,
  answers: {
    200: { description: 'Cleared (`belowMicroUsd: null`).', data: lowBalanceData },
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
  },
});
