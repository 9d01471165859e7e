import type { Pool } from '../db/pool.js';
import { listAcceptedSecrets } from '../db/webhook-registrations-store.js';
import type { Vault } from './vault.js';

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
 * against fresh ones (`fresh`), so a webhook replaced a moment ago is never refused for staleness.
 * A secret's value never changes for its (registration, generation) — a replacement is a new
 * generation — so opened values are kept by generation: a fresh check after a wrong signature costs
 * one indexed read, never a decrypt of a secret already opened.
 */
export function createSecretResolver(deps: {
  pool: Pool;
  vault: Vault;
  graceSeconds: number;
  ttlMs?: number;
  maxEntries?: number;
}): SecretResolver {
  const ttlMs = deps.ttlMs ?? 5_000;
  const maxEntries = deps.maxEntries ?? 10_000;
  const cache = new Map<string, { expires: number; secrets: AcceptedSecret[] }>();
  const opened = new Map<string, string>();

  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    if (map.size >= maxEntries) map.delete(map.keys().next().value!);
    map.set(key, value);
  };

  async function load(registrationId: string): Promise<AcceptedSecret[]> {
    const rows = await listAcceptedSecrets(deps.pool, registrationId, deps.graceSeconds);
    return rows.map((row) => {
      const aad = webhookSecretAad({ registrationId, generation: row.generation });
      let secret = opened.get(aad);
      if (secret === undefined) {
        secret = deps.vault.open(row.sealed, aad);
        remember(opened, aad, secret);
      }
      return { secret, webhookId: row.webhookId, generation: row.generation };
    });
  }

  return {
    async accepted(registrationId, options = {}) {
      const hit = cache.get(registrationId);
      if (hit && !options.fresh && hit.expires > Date.now()) return hit.secrets;
      const secrets = await load(registrationId);
      remember(cache, registrationId, { expires: Date.now() + ttlMs, secrets });
      return secrets;
    },
  };
}
