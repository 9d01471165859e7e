import { randomBytes } from 'node:crypto';
import type { Pool } from '../../db/pool.js';
import { withTransaction } from '../../db/pool.js';
import { appendAudit } from '../../db/audit-store.js';
import { getTenant } from '../../db/tenants-store.js';
import { listDeliveries } from '../../db/webhook-inbox-store.js';
import {
  abandonPendingSecrets,
  getRegistration,
  insertPendingSecret,
  insertRegistration,
  listRegistrations,
  nextSecretGeneration,
  promoteSecret,
  retireSecrets,
  setRegistrationStatus,
  RegistrationNotFoundError,
  updateRegistrationFields,
  type RegistrationRow,
} from '../../db/webhook-registrations-store.js';
import {
  PlatformAmbiguousError,
  PlatformNotFoundError,
  type PlatformClient,
  type ResourceAuth,
  type WebhookRecord,
} from '../../platform/index.js';
import type { Vault } from '../../secrets/vault.js';
import { parseInput } from '../../domain/tenant-input.js';
import { createWebhookInputSchema, updateWebhookInputSchema } from '../../domain/webhook-input.js';
import { webhookSecretAad } from '../../secrets/webhook-secrets.js';

/**
 * Registry webhook management for a tenant's project (or the parent's own), with a personal token as
 * the contract requires (rule 6). The signing secret is generated here (32 random bytes), sealed and
 * stored BEFORE the create call, so a lost response never loses the secret; the receiver URL names our
 * registration, so a lost create is found again by URL. Rotation replaces the webhook: create the new
 * one, accept both secrets, delete the old one, and keep accepting the old secret for a grace period.
 */
export interface WebhookManagementDeps {
  pool: Pool;
  /** A client holding a personal token (`sv_`). */
  platform: PlatformClient;
  /** A client holding the parent's platform key, to check a project belongs to the tenant named (optional). */
  projectOwner?: PlatformClient;
  vault: Vault;
  /** The gateway's public base URL; receiver URLs are `<publicUrl>/webhooks/registry/<registrationId>`. */
  publicUrl: string;
  /** Who acts, as the audit log records it (`operator:<name>`). */
  actor?: string;
  /** The caller's name, recorded as the creator of what it makes. */
  createdBy?: string;
  /**
   * Set to the caller's name when it may act on its own registrations only (and on those made before
   * creators were recorded): another caller's registration is then not found. Absent: every one.
   */
  ownerScope?: string;
}

/** A registration this caller may see and change, or RegistrationNotFoundError as if it did not exist. */
async function ownedRegistration(deps: Pick<WebhookManagementDeps, 'pool' | 'ownerScope'>, id: string) {
  const row = await getRegistration(deps.pool, id);
  if (deps.ownerScope !== undefined && row.createdBy !== null && row.createdBy !== deps.ownerScope)
    throw new RegistrationNotFoundError(id);
  return row;
}

export interface WebhookView {
  registrationId: string;
  externalRef: string | null;
  projectId: string;
  label: string;
  url: string;
  events: string[];
  status: string;
  webhookId: string | null;
  previousWebhookId: string | null;
  createdAt: string;
  createdBy: string | null;
}

const viewOf = (row: RegistrationRow): WebhookView => ({
  registrationId: row.id,
  externalRef: row.externalRef,
  projectId: row.projectId,
  label: row.label,
  url: row.url,
  events: row.events,
  status: row.status,
  webhookId: row.webhookId,
  previousWebhookId: row.previousWebhookId,
  createdAt: row.createdAt.toISOString(),
  createdBy: row.createdBy,
});

/** A refusal of webhook management with its kind, so callers (the gateway) answer by code, not by message. */
export class WebhookManagementError extends Error {
  override name = 'WebhookManagementError';
  constructor(
    message: string,
    readonly code: 'TENANT_NOT_PROVISIONED' | 'PROJECT_NOT_OF_TENANT' | 'REGISTRATION_STATE',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const newRegistrationId = () => `whr_${randomBytes(16).toString('hex')}`;
const newSecret = () => randomBytes(32).toString('base64url');

/**
 * The parent's personal token on the project id, never with X-Service-Subaccount: the contract gives a personal
 * token no tenant context, and a strict platform answers that header with 403 SUBACCOUNT_SCOPE. The tenant is still
 * resolved through OUR records (customer refs are never sent as-is), so an unknown or not-yet-created tenant fails
 * here.
 */
async function authFor(pool: Pool, externalRef: string | null): Promise<ResourceAuth> {
  if (externalRef !== null) {
    const tenant = await getTenant(pool, externalRef);
    if (!tenant.subaccountId)
      throw new WebhookManagementError(`tenant ${externalRef} has no sub-account yet`, 'TENANT_NOT_PROVISIONED');
  }
  return { kind: 'personal' };
}

/**
 * With the parent's platform key at hand, the project is proven to be the tenant's before a webhook is put on it:
 * a project id typed for tenant R must not wire up another tenant's (or the parent's own) registry.
 */
async function assertProjectOfTenant(
  deps: WebhookManagementDeps,
  externalRef: string | null,
  projectId: string,
): Promise<void> {
  if (externalRef === null || !deps.projectOwner) return;
  const tenant = await getTenant(deps.pool, externalRef);
  try {
    await deps.projectOwner.getProject({ auth: { kind: 'platform', subaccountId: tenant.subaccountId! }, projectId });
  } catch (error) {
    if (error instanceof PlatformNotFoundError)
      throw new WebhookManagementError(
        `project ${projectId} is not a project of tenant ${externalRef}`,
        'PROJECT_NOT_OF_TENANT',
        { cause: error },
      );
    throw error;
  }
}

/** Creates the platform webhook for a sealed pending secret; after an ambiguous failure, finds it by URL first. */
async function createOnPlatform(
  deps: WebhookManagementDeps,
  row: RegistrationRow,
  secret: string,
  exclude: string | null,
): Promise<WebhookRecord> {
  const auth = await authFor(deps.pool, row.externalRef);
  try {
    const { webhook } = await deps.platform.createWebhook({
      auth,
      projectId: row.projectId,
      label: row.label,
      url: row.url,
      secret,
      events: row.events,
    });
    return webhook;
  } catch (error) {
    if (!(error instanceof PlatformAmbiguousError)) throw error;
    const { webhooks } = await deps.platform.listWebhooks({ auth, projectId: row.projectId });
    const found = webhooks.find((w) => w.url === row.url && w.id !== exclude);
    if (found) return found;
    throw error;
  }
}

async function sealNewSecret(
  deps: WebhookManagementDeps,
  registrationId: string,
): Promise<{ secret: string; generation: number }> {
  const secret = newSecret();
  const generation = await nextSecretGeneration(deps.pool, registrationId);
  await insertPendingSecret(deps.pool, {
    registrationId,
    generation,
    sealed: deps.vault.seal(secret, webhookSecretAad({ registrationId, generation })),
  });
  return { secret, generation };
}

export async function createRegistryWebhook(
  deps: WebhookManagementDeps,
  raw: { externalRef?: string; projectId: string; label: string; events: string[] },
): Promise<WebhookView> {
  const input = parseInput(createWebhookInputSchema, raw);
  const id = newRegistrationId();
  const externalRef = input.externalRef ?? null;
  await authFor(deps.pool, externalRef);
  await assertProjectOfTenant(deps, externalRef, input.projectId);
  const url = `${deps.publicUrl.replace(/\/+$/, '')}/webhooks/registry/${id}`;
  await insertRegistration(deps.pool, {
    id,
    externalRef,
    projectId: input.projectId,
    label: input.label,
    url,
    events: input.events,
    createdBy: deps.createdBy ?? null,
  });
  const { secret, generation } = await sealNewSecret(deps, id);
  let webhook: WebhookRecord;
  try {
    webhook = await createOnPlatform(deps, await getRegistration(deps.pool, id), secret, null);
  } catch (error) {
    if (!(error instanceof PlatformAmbiguousError)) {
      await withTransaction(deps.pool, async (tx) => {
        await abandonPendingSecrets(tx, id);
        await setRegistrationStatus(tx, id, 'deleted');
      });
    }
    throw error;
  }
  await withTransaction(deps.pool, async (tx) => {
    await promoteSecret(tx, id, generation, webhook.id);
    await setRegistrationStatus(tx, id, 'active');
    await appendAudit(tx, {
      actor: deps.actor ?? 'tenantctl',
      action: 'webhook.created',
      externalRef,
      subject: webhook.id,
      details: { registrationId: id, projectId: input.projectId, events: input.events },
    });
  });
  return viewOf(await getRegistration(deps.pool, id));
}

export async function listRegistryWebhooks(
  deps: Pick<WebhookManagementDeps, 'pool' | 'ownerScope'>,
  filter: { externalRef?: string; includeDeleted?: boolean } = {},
): Promise<WebhookView[]> {
  return (
    await listRegistrations(deps.pool, { ...filter, ...(deps.ownerScope ? { owner: deps.ownerScope } : {}) })
  ).map(viewOf);
}

export async function updateRegistryWebhook(
  deps: WebhookManagementDeps,
  raw: { registrationId: string; label?: string; events?: string[] },
): Promise<WebhookView> {
  const input = parseInput(updateWebhookInputSchema, raw);
  const row = await ownedRegistration(deps, input.registrationId);
  if (row.status !== 'active' || !row.webhookId)
    throw new WebhookManagementError(
      `webhook registration ${row.id} is ${row.status}: only an active one can be updated`,
      'REGISTRATION_STATE',
    );
  const auth = await authFor(deps.pool, row.externalRef);
  await deps.platform.updateWebhook({
    auth,
    projectId: row.projectId,
    webhookId: row.webhookId,
    label: input.label,
    events: input.events,
  });
  await withTransaction(deps.pool, async (tx) => {
    await updateRegistrationFields(tx, row.id, input);
    await appendAudit(tx, {
      actor: deps.actor ?? 'tenantctl',
      action: 'webhook.updated',
      externalRef: row.externalRef,
      subject: row.webhookId,
      details: { registrationId: row.id, label: input.label ?? null, events: input.events ?? null },
    });
  });
  return viewOf(await getRegistration(deps.pool, row.id));
}

/**
 * Rotates the secret by replacing the webhook, losing no delivery: the new webhook is created (its
 * secret accepted from the moment it is sealed), then the old one is deleted; the old secret stays
 * accepted for the grace period, for retries of deliveries it already signed. While both webhooks
 * exist, an event is delivered once to each (two delivery ids): at least once, never lost.
 */
export async function replaceRegistryWebhook(
  deps: WebhookManagementDeps,
  input: { registrationId: string },
): Promise<WebhookView> {
  const row = await ownedRegistration(deps, input.registrationId);
  if (row.status === 'deleted' || row.status === 'creating')
    throw new WebhookManagementError(
      `webhook registration ${row.id} is ${row.status}: it cannot be replaced`,
      'REGISTRATION_STATE',
    );
  const oldWebhookId = row.webhookId;
  await setRegistrationStatus(deps.pool, row.id, 'replacing');
  const { secret, generation } = await sealNewSecret(deps, row.id);
  let webhook: WebhookRecord;
  try {
    webhook = await createOnPlatform(deps, row, secret, oldWebhookId);
  } catch (error) {
    if (!(error instanceof PlatformAmbiguousError)) {
      await withTransaction(deps.pool, async (tx) => {
        await abandonPendingSecrets(tx, row.id);
        await setRegistrationStatus(tx, row.id, 'active');
      });
    }
    throw error;
  }
  await promoteSecret(deps.pool, row.id, generation, webhook.id);
  if (oldWebhookId) await deletePlatformWebhook(deps, row, oldWebhookId);
  await withTransaction(deps.pool, async (tx) => {
    await retireSecrets(tx, row.id, ['previous']);
    await setRegistrationStatus(tx, row.id, 'active');
    await appendAudit(tx, {
      actor: deps.actor ?? 'tenantctl',
      action: 'webhook.replaced',
      externalRef: row.externalRef,
      subject: webhook.id,
      details: { registrationId: row.id, replaced: oldWebhookId },
    });
  });
  return viewOf(await getRegistration(deps.pool, row.id));
}

export async function deleteRegistryWebhook(
  deps: WebhookManagementDeps,
  input: { registrationId: string },
): Promise<WebhookView> {
  const row = await ownedRegistration(deps, input.registrationId);
  for (const webhookId of [row.webhookId, row.previousWebhookId])
    if (webhookId) await deletePlatformWebhook(deps, row, webhookId);
  await withTransaction(deps.pool, async (tx) => {
    await retireSecrets(tx, row.id, ['pending', 'current', 'previous']);
    await setRegistrationStatus(tx, row.id, 'deleted');
    await appendAudit(tx, {
      actor: deps.actor ?? 'tenantctl',
      action: 'webhook.deleted',
      externalRef: row.externalRef,
      subject: row.webhookId,
      details: { registrationId: row.id },
    });
  });
  return viewOf(await getRegistration(deps.pool, row.id));
}

async function deletePlatformWebhook(
  deps: WebhookManagementDeps,
  row: RegistrationRow,
  webhookId: string,
): Promise<void> {
  try {
    await deps.platform.deleteWebhook({
      auth: await authFor(deps.pool, row.externalRef),
      projectId: row.projectId,
      webhookId,
    });
  } catch (error) {
    if (!(error instanceof PlatformNotFoundError)) throw error; // already gone: the goal is reached
  }
}

export interface DeliveryView {
  deliveryId: string;
  webhookId: string;
  event: string | null;
  platformStatus: string | null;
  responseCode: number | null;
  inboxState: string | null;
  processedAt: string | null;
}

/** The platform's delivery history of the registration's webhooks, beside our inbox's record of each. */
export async function listRegistryDeliveries(
  deps: WebhookManagementDeps,
  input: { registrationId: string },
): Promise<DeliveryView[]> {
  const row = await ownedRegistration(deps, input.registrationId);
  const inbox = new Map((await listDeliveries(deps.pool, row.id, 1000)).map((d) => [d.deliveryId, d]));
  const auth = await authFor(deps.pool, row.externalRef);
  const views: DeliveryView[] = [];
  for (const webhookId of [row.previousWebhookId, row.webhookId]) {
    if (!webhookId || row.status === 'deleted') continue;
    // A replaced webhook is usually gone from the platform, and its history with it.
    const deliveries = await deps.platform.listWebhookDeliveries({ auth, projectId: row.projectId, webhookId }).then(
      (result) => result.deliveries,
      (error: unknown) => {
        if (error instanceof PlatformNotFoundError && webhookId !== row.webhookId) return [];
        throw error;
      },
    );
    for (const d of deliveries) {
      const ours = inbox.get(d.deliveryId);
      views.push({
        deliveryId: d.deliveryId,
        webhookId,
        event: d.event ?? null,
        platformStatus: d.rawStatus ?? null,
        responseCode: d.responseCode ?? null,
        inboxState: ours?.state ?? null,
        processedAt: ours?.processedAt?.toISOString() ?? null,
      });
    }
  }
  return views;
}
