import type pg from 'pg';
import { InvalidInputError } from '../domain/tenant-input.js';
import type { Queryable } from './pool.js';

/** Event subscriptions and their sealed signing secrets (never a plaintext secret in a row). */
export interface SubscriptionRow {
  id: string;
  url: string;
  types: string[];
  label: string;
  status: 'active' | 'deleted';
  createdBy: string;
  createdAt: Date;
  deletedAt: Date | null;
  /** The newest secret's generation; older ones still sign until their expiry (rotation overlap). */
  secretGeneration: number;
  signingSecrets: number;
}

export interface SubscriptionSecretRow {
  subscriptionId: string;
  generation: number;
  sealed: string;
  expiresAt: Date | null;
}

const COLUMNS = `s.id, s.url, s.types, s.label, s.status, s.created_by AS "createdBy", s.created_at AS "createdAt",
  s.deleted_at AS "deletedAt",
  (SELECT coalesce(max(generation), 0)::int FROM event_subscription_secrets x WHERE x.subscription_id = s.id) AS
    "secretGeneration",
  (SELECT count(*)::int FROM event_subscription_secrets x WHERE x.subscription_id = s.id
     AND (x.expires_at IS NULL OR x.expires_at > now())) AS "signingSecrets"`;

/** A bad input like any other (one clear error, nothing written): the same URL and types are live already. */
export class DuplicateSubscriptionError extends InvalidInputError {
  override name = 'DuplicateSubscriptionError';
  constructor(readonly existingId: string) {
    super([
      `url: subscription ${existingId} already sends these types to this URL (delete it first, or change the types)`,
    ]);
  }
}

export class SubscriptionNotFoundError extends Error {
  override name = 'SubscriptionNotFoundError';
  constructor(readonly subscriptionId: string) {
    super(`no live event subscription ${subscriptionId}`);
  }
}

export async function findLiveDuplicate(db: Queryable, url: string, types: string[]): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM event_subscriptions WHERE status = 'active' AND url = $1::text AND types = $2::text[]`,
    [url, types],
  );
  return rows[0]?.id;
}

/** The subscription and its first sealed secret, in the caller's transaction. */
export async function insertSubscription(
  tx: pg.PoolClient,
  input: { id: string; url: string; types: string[]; label: string; createdBy: string; sealed: string },
): Promise<SubscriptionRow> {
  const inserted = await tx.query(
    `INSERT INTO event_subscriptions (id, url, types, label, status, created_by)
     VALUES ($1::text, $2::text, $3::text[], $4::text, 'active', $5::text)
     ON CONFLICT DO NOTHING RETURNING id`,
    [input.id, input.url, input.types, input.label, input.createdBy],
  );
  if (!inserted.rowCount) {
    const existing = await findLiveDuplicate(tx, input.url, input.types);
    throw new DuplicateSubscriptionError(existing ?? 'unknown');
  }
  await tx.query(
    `INSERT INTO event_subscription_secrets (subscription_id, generation, sealed) VALUES ($1::text, 1, $2::text)`,
    [input.id, input.sealed],
  );
  return getSubscription(tx, input.id);
}

export async function findSubscription(db: Queryable, id: string): Promise<SubscriptionRow | undefined> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${COLUMNS} FROM event_subscriptions s WHERE s.id = $1::text`,
    [id],
  );
  return rows[0];
}

export async function getSubscription(db: Queryable, id: string): Promise<SubscriptionRow> {
  const row = await findSubscription(db, id);
  if (!row) throw new SubscriptionNotFoundError(id);
  return row;
}

export async function listSubscriptions(
  db: Queryable,
  options: { includeDeleted?: boolean; createdBy?: string } = {},
): Promise<SubscriptionRow[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${COLUMNS} FROM event_subscriptions s WHERE ($1::boolean OR s.status = ` +
      `'active') AND ($2::text IS NULL OR s.created_by = $2::text) ORDER BY s.created_at, s.id`,
    [options.includeDeleted ?? false, options.createdBy ?? null],
  );
  return rows;
}

/** Deleted subscriptions get no new deliveries; pending ones end as failed (`subscription deleted`). */
export async function deleteSubscription(tx: pg.PoolClient, id: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE event_subscriptions SET status = 'deleted', deleted_at = now() WHERE id = $1::text AND status = 'active'`,
    [id],
  );
  if (!rowCount) return false;
  await tx.query(
    `UPDATE event_deliveries SET state = 'failed', failed_at = now(), last_error = 'subscription deleted', updated_at
      = now()
      WHERE subscription_id = $1::text AND state = 'pending'`,
    [id],
  );
  return true;
}

/**
 * A new secret generation; the ones still signing keep signing until `overlapSeconds` from now, so
 * receivers can switch while both signatures arrive. Locks the subscription row (one rotation at a time).
 */
export async function addSecretGeneration(
  tx: pg.PoolClient,
  id: string,
  overlapSeconds: number,
  seal: (generation: number) => string,
): Promise<number> {
  const { rows } = await tx.query<{ next: number }>(
    `SELECT (SELECT coalesce(max(generation), 0)::int + 1 FROM event_subscription_secrets WHERE subscription_id =
      s.id) AS next
       FROM event_subscriptions s WHERE s.id = $1::text AND s.status = 'active' FOR UPDATE`,
    [id],
  );
  if (!rows[0]) throw new SubscriptionNotFoundError(id);
  const generation = rows[0].next;
  await tx.query(
    `UPDATE event_subscription_secrets SET expires_at = now() + make_interval(secs => $2::int)
      WHERE subscription_id = $1::text AND (expires_at IS NULL OR expires_at > now() + make_interval(secs => $2::int))`,
    [id, overlapSeconds],
  );
  await tx.query(
    `INSERT INTO event_subscription_secrets (subscription_id, generation, sealed) VALUES ($1::text, $2::int, $3::text)`,
    [id, generation, seal(generation)],
  );
  return generation;
}

/** The secrets a delivery is signed with now: the newest, and any still in their overlap. */
export async function listSigningSecrets(db: Queryable, id: string): Promise<SubscriptionSecretRow[]> {
  const { rows } = await db.query<SubscriptionSecretRow>(
    `SELECT subscription_id AS "subscriptionId", generation, sealed, expires_at AS "expiresAt"
       FROM event_subscription_secrets
      WHERE subscription_id = $1::text AND (expires_at IS NULL OR expires_at > now())
      ORDER BY generation DESC`,
    [id],
  );
  return rows;
}
