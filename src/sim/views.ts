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
    externalRef: tenant.externalRef,
    parent: { id: tenant.parentId },
    status: statusName(tenant, choices),
    limits: { activeKeyLimit: tenantActiveKeyLimit },
    createdAt: isoOrNull(tenant.createdAt),
    updatedAt: isoOrNull(tenant.updatedAt),
  };
}

export function apiKeyView(key: ApiKeyRecord, choices: SimChoices) {
  return {
    [choices.keyIdField]: key.id,
    name: key.name,
    status: key.status,
    ...(key.subaccountId === null ? {} : { subaccountId: key.subaccountId }),
    createdAt: isoOrNull(key.createdAt),
    revokedAt: isoOrNull(key.revokedAt),
    ...(choices.showLastUsed ? { lastUsedAt: isoOrNull(key.lastUsedAt) } : {}),
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

export function deliveryView(delivery: DeliveryRecord) {
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
