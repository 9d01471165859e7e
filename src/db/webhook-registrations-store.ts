import type { Queryable } from './pool.js';
import { RegistrationNotFoundError } from '../domain/record-errors.js';

/**
 * Registry webhook registrations: our receiver route (`/webhooks/registry/<id>`) for one platform
 * webhook on one project, and its sealed signing secrets. A replacement (secret rotation) keeps the
 * registration and its route; only the platform webhook and the secret change generation.
 */
export const RegistrationStatus = {
  creating: 'creating',
  active: 'active',
  replacing: 'replacing',
  deleted: 'deleted',
} as const;
export type RegistrationStatus = (typeof RegistrationStatus)[keyof typeof RegistrationStatus];

export const SecretState = {
  /**
   * Sealed before the platform call that sends it: deliveries signed with it may arrive before we learn the webhook id.
   */
  pending: 'pending',
  current: 'current',
  /** The replaced webhook's: accepted until retired_at plus the grace period (retries of its deliveries). */
  previous: 'previous',
  /** Its platform call was refused: never accepted. */
  abandoned: 'abandoned',
} as const;
export type SecretState = (typeof SecretState)[keyof typeof SecretState];

export interface RegistrationRow {
  id: string;
  externalRef: string | null;
  projectId: string;
  label: string;
  url: string;
  events: string[];
  status: RegistrationStatus;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  /** The platform webhook id of the current secret, when known. */
  webhookId: string | null;
  /** The replaced webhook still accepted, during and shortly after a replacement. */
  previousWebhookId: string | null;
  /** Who made it (the authenticated name); null for registrations made before this was recorded. */
  createdBy: string | null;
}

export interface SecretRow {
  registrationId: string;
  generation: number;
  webhookId: string | null;
  state: SecretState;
  sealed: string;
}

const COLUMNS = `r.id, r.external_ref AS "externalRef", r.project_id AS "projectId", r.label, r.url, r.events, r.status,
  r.created_at AS "createdAt", r.updated_at AS "updatedAt", r.deleted_at AS "deletedAt", r.created_by AS "createdBy",
  (SELECT s.webhook_id FROM webhook_secrets s WHERE s.registration_id = r.id AND s.state = 'current') AS "webhookId",
  (SELECT s.webhook_id FROM webhook_secrets s WHERE s.registration_id = r.id AND s.state = 'previous'
     ORDER BY s.generation DESC LIMIT 1) AS "previousWebhookId"`;

export async function insertRegistration(
  db: Queryable,
  input: {
    id: string;
    externalRef: string | null;
    projectId: string;
    label: string;
    url: string;
    events: string[];
    createdBy?: string | null;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_registrations (id, external_ref, project_id, label, url, events, status, created_by)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text[], 'creating', $7::text)`,
    [input.id, input.externalRef, input.projectId, input.label, input.url, input.events, input.createdBy ?? null],
  );
}

export async function findRegistration(db: Queryable, id: string): Promise<RegistrationRow | undefined> {
  const { rows } = await db.query<RegistrationRow>(
    `SELECT ${COLUMNS} FROM webhook_registrations r WHERE r.id = $1::text`,
    [id],
  );
  return rows[0];
}

export { RegistrationNotFoundError };

export async function getRegistration(db: Queryable, id: string): Promise<RegistrationRow> {
  const row = await findRegistration(db, id);
  if (!row) throw new RegistrationNotFoundError(id);
  return row;
}

export async function listRegistrations(
  db: Queryable,
  filter: { externalRef?: string; includeDeleted?: boolean; owner?: string } = {},
): Promise<RegistrationRow[]> {
  const { rows } = await db.query<RegistrationRow>(
    `SELECT ${COLUMNS} FROM webhook_registrations r
      WHERE ($1::text IS NULL OR r.external_ref = $1::text) AND ($2::boolean OR r.status <> 'deleted')
        AND ($3::text IS NULL OR r.created_by IS NULL OR r.created_by = $3::text)
      ORDER BY r.created_at, r.id`,
    [filter.externalRef ?? null, filter.includeDeleted ?? false, filter.owner ?? null],
  );
  return rows;
}

export async function setRegistrationStatus(db: Queryable, id: string, status: RegistrationStatus): Promise<void> {
  await db.query(
    `UPDATE webhook_registrations SET status = $2::text, updated_at = now(),
            deleted_at = CASE WHEN $2::text = 'deleted' THEN coalesce(deleted_at, now()) ELSE deleted_at END
      WHERE id = $1::text`,
    [id, status],
  );
}

export async function updateRegistrationFields(
  db: Queryable,
  id: string,
  change: { label?: string; events?: string[] },
): Promise<void> {
  await db.query(
    `UPDATE webhook_registrations SET label = coalesce($2::text, label), events = coalesce($3::text[], events),
      updated_at = now()
      WHERE id = $1::text`,
    [id, change.label ?? null, change.events ?? null],
  );
}

/** The next secret generation of a registration (1 for a new one). */
export async function nextSecretGeneration(db: Queryable, registrationId: string): Promise<number> {
  const { rows } = await db.query<{ next: number }>(
    `SELECT coalesce(max(generation), 0)::int + 1 AS next FROM webhook_secrets WHERE registration_id = $1::text`,
    [registrationId],
  );
  return rows[0]!.next;
}

export async function insertPendingSecret(
  db: Queryable,
  input: { registrationId: string; generation: number; sealed: string },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_secrets (registration_id, generation, state, sealed) VALUES ` +
      `($1::text, $2::int, 'pending', $3::text)`,
    [input.registrationId, input.generation, input.sealed],
  );
}

/** The platform accepted the secret: it becomes current, and the one it replaces becomes previous (still live). */
export async function promoteSecret(
  db: Queryable,
  registrationId: string,
  generation: number,
  webhookId: string,
): Promise<void> {
  await db.query(
    `UPDATE webhook_secrets SET state = 'previous'
      WHERE registration_id = $1::text AND state = 'current' AND generation <> $2::int`,
    [registrationId, generation],
  );
  await db.query(
    `UPDATE webhook_secrets SET state = 'current', webhook_id = $3::text WHERE ` +
      `registration_id = $1::text AND generation = $2::int`,
    [registrationId, generation, webhookId],
  );
}

/** Starts the grace period of secrets whose webhook is gone (after a replacement, or a delete). */
export async function retireSecrets(
  db: Queryable,
  registrationId: string,
  states: readonly SecretState[],
): Promise<void> {
  await db.query(
    `UPDATE webhook_secrets SET retired_at = coalesce(retired_at, now())
      WHERE registration_id = $1::text AND state = ANY($2::text[])`,
    [registrationId, states],
  );
}

export async function abandonPendingSecrets(db: Queryable, registrationId: string): Promise<void> {
  await db.query(
    `UPDATE webhook_secrets SET state = 'abandoned', retired_at = coalesce(retired_at, now())
      WHERE registration_id = $1::text AND state = 'pending'`,
    [registrationId],
  );
}

/**
 * The secrets a delivery to this route may be signed with: pending and current ones, and retired
 * ones (a replaced or deleted webhook) until their grace period ends.
 */
export async function listAcceptedSecrets(
  db: Queryable,
  registrationId: string,
  graceSeconds: number,
): Promise<SecretRow[]> {
  const { rows } = await db.query<SecretRow>(
    `SELECT registration_id AS "registrationId", generation, webhook_id AS "webhookId", state, sealed
       FROM webhook_secrets
      WHERE registration_id = $1::text AND state <> 'abandoned'
        AND (retired_at IS NULL OR retired_at > now() - make_interval(secs => $2::int))
      ORDER BY generation DESC`,
    [registrationId, graceSeconds],
  );
  return rows;
}
