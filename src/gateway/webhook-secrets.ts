import type { Pool } from '../db/pool.js';
import { listAcceptedSecrets } from '../db/webhook-registrations-store.js';
import type { Vault } from '../secrets/vault.js';

/** The AAD of a webhook signing secret: names the registration and generation, so a sealed value cannot be moved. */
export function webhookSecretAad(owner: { registrationId: string; generation: number }): string {
  return JSON.stringify(['registry-webhook-secret', owner.registrationId, owner.generation]);
}

export interface AcceptedSecret {
  secret: string;
  /** The platform webhook this secret belongs to; null while its create call is in flight. */
  webhookId: string | null;
  generation: number;
}

export interface SecretResolver {
  /** The secrets a delivery to this route may be signed with (empty: no such live registration). */
  accepted(registrationId: string, options?: { fresh?: boolean }): Promise<AcceptedSecret[]>;
}

/**
 * Opens the accepted secrets of a route, cached for a few seconds so the receiver does not read and
 * decrypt on every delivery. A signature that fails against cached secrets is checked once more
 * against fresh ones (`fresh`, at most once a second per route), so a webhook replaced a moment ago is
 * not refused for staleness (a delivery in that second is refused once and retried by the platform).
 */
export function createSecretResolver(deps: { pool: Pool; vault: Vault; graceSeconds: number; ttlMs?: number; maxEntries?: number; minFreshIntervalMs?: number }): SecretResolver {
  const ttlMs = deps.ttlMs ?? 5_000;
  const maxEntries = deps.maxEntries ?? 10_000;
  // A flood of well-formed but wrong signatures must not turn into one read and decrypt each.
  const minFreshIntervalMs = deps.minFreshIntervalMs ?? 1_000;
  const cache = new Map<string, { loaded: number; expires: number; secrets: AcceptedSecret[] }>();

  async function load(registrationId: string): Promise<AcceptedSecret[]> {
    const rows = await listAcceptedSecrets(deps.pool, registrationId, deps.graceSeconds);
    return rows.map((row) => ({
      secret: deps.vault.open(row.sealed, webhookSecretAad({ registrationId, generation: row.generation })),
      webhookId: row.webhookId,
      generation: row.generation,
    }));
  }

  return {
    async accepted(registrationId, options = {}) {
      const hit = cache.get(registrationId);
      const now = Date.now();
      if (hit && hit.expires > now && (!options.fresh || now - hit.loaded < minFreshIntervalMs)) return hit.secrets;
      const secrets = await load(registrationId);
      if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
      cache.set(registrationId, { loaded: Date.now(), expires: Date.now() + ttlMs, secrets });
      return secrets;
    },
  };
}
