import { isObject, type JsonObject } from './envelope.js';
import {
  asStringList,
  asText,
  asTimestamp,
  pick,
  protocolError,
  requireObject,
  type ParseContext,
} from './normalize.js';
import { requireId, unwrapRecord } from './parse-control.js';
import type { EnvVars, ProjectRecord, WebhookDeliveryRecord, WebhookRecord } from './records.js';
import { rawStatusOf } from './status.js';

const PROJECT_ID_KEYS = ['id', 'projectId', 'project_id'] as const;
const WEBHOOK_ID_KEYS = ['id', 'webhookId', 'webhook_id'] as const;

export function parseProject(value: unknown, ctx: ParseContext): ProjectRecord {
  const obj = requireObject(unwrapRecord(value, PROJECT_ID_KEYS, ['project']), 'a project', ctx);
  return {
    id: requireId(asText(pick(obj, PROJECT_ID_KEYS)), 'the project', ctx),
    name: asText(obj.name),
    region: asText(pick(obj, ['region', 'regionId', 'region_id'])),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
    rawStatus: rawStatusOf(obj),
  };
}

/** The signing secret is never returned after creation; if a platform echoes it anyway, it is dropped here. */
export function parseWebhook(value: unknown, ctx: ParseContext): WebhookRecord {
  const obj = requireObject(unwrapRecord(value, WEBHOOK_ID_KEYS, ['webhook']), 'a webhook', ctx);
  return {
    id: requireId(asText(pick(obj, WEBHOOK_ID_KEYS)), 'the webhook', ctx),
    label: asText(pick(obj, ['label', 'name'])),
    url: asText(pick(obj, ['url', 'endpoint'])),
    events: asStringList(pick(obj, ['events', 'eventTypes', 'event_types'])) ?? [],
    rawStatus: rawStatusOf(obj),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
  };
}

function asStatusCode(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^[0-9]{3}$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number >= 100 && number <= 599 ? number : undefined;
}

/**
 * The first present value among dotted paths (`lastResponse.status`), so nested delivery shapes read like flat ones.
 */
function pickPath(obj: JsonObject, paths: readonly string[]): unknown {
  for (const path of paths) {
    let current: unknown = obj;
    for (const key of path.split('.')) current = isObject(current) ? current[key] : undefined;
    if (current !== undefined && current !== null) return current;
  }
  return undefined;
}

const DELIVERY_STATUS = [
  'status',
  'state',
  'outcome',
  'result',
  'deliveryStatus',
  'delivery_status',
  'status.state',
  'status.name',
] as const;
const RESPONSE_CODE = [
  'responseCode',
  'response_code',
  'responseStatus',
  'response_status',
  'statusCode',
  'status_code',
  'httpStatus',
  'http_status',
  'lastResponse.status',
  'lastResponse.statusCode',
  'lastResponse.code',
  'last_response.status',
  'last_response.status_code',
  'response.status',
  'response.statusCode',
  'response.status_code',
  'response.code',
  'lastAttempt.responseCode',
  'lastAttempt.status',
] as const;
const RESPONSE_BODY = [
  'responseBody',
  'response_body',
  'lastResponse.body',
  'last_response.body',
  'response.body',
] as const;
const DELIVERY_ERROR = [
  'error',
  'errorMessage',
  'error_message',
  'errorDetails',
  'error_details',
  'lastError',
  'last_error',
  'failureReason',
  'failure_reason',
  'lastAttempt.error',
  'lastResponse.error',
  'last_response.error',
] as const;

/** Status words can arrive as `status: 200` on platforms that put the HTTP code there; only words are a status. */
function deliveryStatusOf(obj: JsonObject): string | undefined {
  for (const path of DELIVERY_STATUS) {
    const value = pickPath(obj, [path]);
    if (typeof value === 'string' && value !== '') return value;
    if (isObject(value)) {
      const inner = pickPath(value, ['state', 'name', 'code']);
      if (typeof inner === 'string') return inner;
    }
  }
  return undefined;
}

export function parseDelivery(value: unknown, ctx: ParseContext): WebhookDeliveryRecord {
  const obj = requireObject(value, 'a delivery record', ctx);
  const error = pickPath(obj, DELIVERY_ERROR);
  const numericStatus = typeof obj.status === 'number' ? obj.status : undefined;
  return {
    deliveryId: requireId(asText(pick(obj, ['deliveryId', 'delivery_id', 'id'])), 'the delivery record', ctx),
    event: ['event', 'eventType', 'event_type', 'type', 'event.name', 'event.type']
      .map((path) => asText(pickPath(obj, [path])))
      .find((text) => text !== undefined),
    rawStatus: deliveryStatusOf(obj),
    responseCode: asStatusCode(pickPath(obj, RESPONSE_CODE) ?? numericStatus),
    responseBody: asText(pickPath(obj, RESPONSE_BODY)),
    error: isObject(error) ? asText(pick(error, ['message', 'detail', 'details', 'reason', 'code'])) : asText(error),
    createdAt: asTimestamp(pickPath(obj, ['createdAt', 'created_at', 'timestamp', 'sentAt', 'sent_at'])),
    completedAt: asTimestamp(
      pickPath(obj, ['completedAt', 'completed_at', 'finishedAt', 'finished_at', 'deliveredAt', 'delivered_at']),
    ),
  };
}

const ENV_WRAPPERS = ['vars', 'envVars', 'env_vars', 'variables', 'env', 'items', 'data'] as const;

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/**
 * Environment variables arrive (not shown) as a list of `{ key|name, value }` or as a map, possibly wrapped in
 * `vars`/`envVars`/...; all become one ordered `{ NAME: value }` map.
 */
export function parseEnvVars(value: unknown, ctx: ParseContext, depth = 0): EnvVars {
  if (value === undefined || value === null) return {};
  if (Array.isArray(value)) {
    const vars: EnvVars = {};
    for (const item of value) {
      const name = isObject(item) ? asText(pick(item, ['key', 'name'])) : undefined;
      const text = isObject(item) ? scalarText(item.value) : undefined;
      if (name === undefined || text === undefined)
        throw protocolError(ctx, 'an environment variable has no name or value');
      vars[name] = text;
    }
    return vars;
  }
  if (!isObject(value)) throw protocolError(ctx, 'environment variables are neither a list nor a map');
  const wrapped = pick(value, ENV_WRAPPERS);
  if (wrapped !== undefined && depth < 2) return parseEnvVars(wrapped, ctx, depth + 1);
  const vars: EnvVars = {};
  for (const [name, raw] of Object.entries(value)) {
    const text = scalarText(raw);
    if (text === undefined)
      throw protocolError(ctx, `environment variable ${JSON.stringify(name)} has no scalar value`);
    vars[name] = text;
  }
  return vars;
}
