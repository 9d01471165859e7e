import { isObject } from './envelope.js';
import { asStringList, asText, asTimestamp, pick, protocolError, requireObject, type ParseContext } from './normalize.js';
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
  const number = typeof value === 'string' ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) ? number : undefined;
}

export function parseDelivery(value: unknown, ctx: ParseContext): WebhookDeliveryRecord {
  const obj = requireObject(value, 'a delivery record', ctx);
  const error = pick(obj, ['error', 'errorMessage', 'error_message', 'errorDetails', 'error_details']);
  return {
    deliveryId: requireId(asText(pick(obj, ['deliveryId', 'delivery_id', 'id'])), 'the delivery record', ctx),
    event: asText(pick(obj, ['event', 'eventType', 'event_type', 'type'])),
    rawStatus: rawStatusOf(obj),
    responseCode: asStatusCode(pick(obj, ['responseCode', 'response_code', 'responseStatus', 'statusCode', 'status_code'])),
    responseBody: asText(pick(obj, ['responseBody', 'response_body'])),
    error: isObject(error) ? asText(error.message) : asText(error),
    createdAt: asTimestamp(pick(obj, ['createdAt', 'created_at'])),
    completedAt: asTimestamp(pick(obj, ['completedAt', 'completed_at'])),
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
      if (name === undefined || text === undefined) throw protocolError(ctx, 'an environment variable has no name or value');
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
    if (text === undefined) throw protocolError(ctx, `environment variable ${JSON.stringify(name)} has no scalar value`);
    vars[name] = text;
  }
  return vars;
}
