import type { SimChoices } from './choices.js';
import { isoOrNull } from './clock.js';
import type {
  ApiKeyRecord,
  DeliveryRecord,
  ProjectRecord,
  SubaccountRecord,
  TransferRecord,
  WebhookRecord,
} from './state.js';

/** How records look on the wire. Secrets (token hashes, webhook secrets) never leave through here. */
/** Status name on the wire: `operating` is shown as the configured operatingStatus (default `active`). */
export function statusName(tenant: SubaccountRecord, choices: SimChoices): string {
  return tenant.status === 'operating' ? choices.operatingStatus : tenant.status;
}

export function subaccountView(tenant: SubaccountRecord, choices: SimChoices, tenantActiveKeyLimit: number) {
  return {
    id: tenant.id,
    name: tenant.name,
    ...(tenant.externalRef === null ? {} : { externalRef: tenant.externalRef }),
    parent: { id: tenant.parentId },
    status: statusName(tenant, choices),
    limits: { activeKeyLimit: tenantActiveKeyLimit },
    createdAt: isoOrNull(tenant.createdAt),
    updatedAt: isoOrNull(tenant.updatedAt),
    ...(choices.extraFields
      ? { billing: { plan: 'standard', wallet: { currency: 'USD' } }, region: { id: 'eu-central', name: 'EU Central' } }
      : {}),
  };
}

function lastUseView(key: ApiKeyRecord, choices: SimChoices): Record<string, unknown> {
  if (!choices.showLastUsed) return {};
  const at = isoOrNull(key.lastUsedAt);
  switch (choices.lastUseField) {
    case 'usage':
      return { usage: { lastUsedAt: at, requestCount: key.useCount } };
    case 'lastUsed.at':
      return { lastUsed: at === null ? null : { at, ip: '203.0.113.7' } };
    default:
      return { lastUsedAt: at };
  }
}

/** Fields a richer platform adds; a client must ignore them, and never read them as last use. */
function extraKeyFields(key: ApiKeyRecord, choices: SimChoices): Record<string, unknown> {
  if (!choices.extraFields) return {};
  return {
    tokenHint: `${key.kind === 'platform' ? 'svpk' : 'svsk'}_…${key.id.slice(-4)}`,
    metadata: { createdBy: { kind: 'parent', id: key.parentId }, labels: {} },
    updatedAt: isoOrNull(key.revokedAt ?? key.createdAt),
  };
}

export function apiKeyView(key: ApiKeyRecord, choices: SimChoices) {
  return {
    [choices.keyIdField]: key.id,
    name: key.name,
    [choices.keyStatusField]: key.status,
    ...(key.subaccountId === null ? {} : { subaccountId: key.subaccountId }),
    createdAt: isoOrNull(key.createdAt),
    revokedAt: isoOrNull(key.revokedAt),
    ...lastUseView(key, choices),
    ...extraKeyFields(key, choices),
  };
}

export function transferView(transfer: TransferRecord) {
  return {
    id: transfer.id,
    subaccountId: transfer.subaccountId,
    amountMicroUsd: transfer.amount.toString(),
    idempotencyKey: transfer.idempotencyKey,
    status: 'completed',
    createdAt: isoOrNull(transfer.createdAt),
  };
}

export function projectView(project: ProjectRecord) {
  return {
    id: project.id,
    name: project.name,
    region: project.region,
    status: project.status,
    createdAt: isoOrNull(project.createdAt),
  };
}

export function webhookView(webhook: WebhookRecord) {
  return {
    id: webhook.id,
    projectId: webhook.projectId,
    label: webhook.label,
    url: webhook.url,
    events: [...webhook.events],
    hasSecret: webhook.secret !== null,
    createdAt: isoOrNull(webhook.createdAt),
    updatedAt: isoOrNull(webhook.updatedAt),
  };
}

export function deliveryView(delivery: DeliveryRecord, choices?: SimChoices) {
  if (choices?.deliveryShape === 'outcome') {
    return {
      id: delivery.id,
      webhookId: delivery.webhookId,
      event: delivery.event,
      outcome: delivery.status,
      attempts: delivery.attempts,
      lastResponse:
        delivery.responseCode === null ? null : { status: delivery.responseCode, body: delivery.responseBody },
      lastError: delivery.error === null ? null : { message: delivery.error },
      createdAt: isoOrNull(delivery.createdAt),
      completedAt: isoOrNull(delivery.completedAt),
    };
  }
  return {
    id: delivery.id,
    deliveryId: delivery.id,
    webhookId: delivery.webhookId,
    event: delivery.event,
    status: delivery.status,
    attempts: delivery.attempts,
    responseCode: delivery.responseCode,
    responseBody: delivery.responseBody,
    error: delivery.error,
    createdAt: isoOrNull(delivery.createdAt),
    completedAt: isoOrNull(delivery.completedAt),
  };
}
