/**
 * The parent's platform key as every process reads it: from our sealed records (parent_keys), cached in memory,
 * re-read on a short interval and at once after a 401. PLATFORM_API_KEY is only a bootstrap: imported when no key is
 * current yet, ignored after that. A process reports the key it uses in process_credentials on every refresh, so a
 * parent key rotation knows when every live process has switched.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { appendAudit } from '../db/audit-store.js';
import {
  findCurrentParentKey,
  forgetProcessCredential,
  importParentKey,
  nextParentKeyRowId,
  parentKeyAad,
  reportProcessCredential,
} from '../db/parent-keys-store.js';
import { withTransaction, type Pool } from '../db/pool.js';
import type { PlatformKeyProvider } from '../platform/auth.js';
import { SecretToken } from '../platform/secret-token.js';
import { fingerprintToken } from './fingerprint.js';
import { sealedKeyId, type Vault } from './vault.js';

export const PARENT_KEY_PATTERN = /^svpk_\S{8,}$/;

export class ParentKeyInputError extends Error {
  override name = 'ParentKeyInputError';
}

export class NoParentKeyError extends Error {
  override name = 'NoParentKeyError';
}

/**
 * Seals and stores a platform key as the current one (`tenantctl parent-key import`, and the bootstrap). The value
 * is checked before anything is written; importing the current key again is a no-op. With `onlyIfNone`, only when
 * no key is current. Returns what identifies it, never the token.
 */
export async function importParentKeyToken(
  deps: { pool: Pool; vault: Vault },
  input: { token: string; onlyIfNone: boolean; actor: string; reason?: string },
): Promise<{ imported: boolean; fingerprint: string }> {
  if (typeof input.token !== 'string' || !PARENT_KEY_PATTERN.test(input.token))
    throw new ParentKeyInputError('token: must be a platform key (svpk_ followed by at least 8 characters)');
  const fingerprint = fingerprintToken(input.token);
  const rowId = await nextParentKeyRowId(deps.pool);
  const sealed = deps.vault.seal(input.token, parentKeyAad(rowId));
  const { imported } = await importParentKey(
    deps.pool,
    { rowId, fingerprint, masterKeyId: sealedKeyId(sealed), sealed, onlyIfNone: input.onlyIfNone },
    {
      actor: input.actor,
      action: 'parent_key.imported',
      subject: fingerprint,
      details: { fingerprint, ...(input.reason ? { reason: input.reason } : {}) },
    },
  ).catch((error: unknown) => {
    // Two processes bootstrapping at once: the other one's import won the one-current index.
    if ((error as { code?: string }).code === '23505' && input.onlyIfNone) return { imported: false };
    throw error;
  });
  return { imported, fingerprint };
}

export interface ParentKeySourceOptions {
  pool: Pool;
  vault: Vault;
  /** Re-read the records this often (ms). */
  refreshMs: number;
  /** Imported when no key is current (first start). */
  bootstrap?: string | undefined;
  /** Report the key in use as this process (worker, gateway); absent: no heartbeat (the CLI). */
  report?: { kind: 'worker' | 'gateway' | 'cli'; processId?: string };
  onError?: (error: unknown) => void;
}

export interface ParentKeySource extends PlatformKeyProvider {
  /** The parent_keys row in use (the credential id the heartbeat reports), undefined before the first load. */
  readonly rowId: string | undefined;
  readonly fingerprint: string | undefined;
  readonly processId: string | undefined;
  /** Re-reads the records now (and reports); resolves with whether the key changed. */
  refresh(): Promise<boolean>;
  close(): Promise<void>;
}

export function newProcessId(kind: string): string {
  return `${kind}:${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** Loads the current key (importing the bootstrap on first start) and keeps it fresh until close(). */
export async function startParentKeySource(options: ParentKeySourceOptions): Promise<ParentKeySource> {
  const { pool, vault } = options;
  const processId = options.report ? (options.report.processId ?? newProcessId(options.report.kind)) : undefined;
  let token: SecretToken | undefined;
  let rowId: string | undefined;
  let fingerprint: string | undefined;
  let inFlight: Promise<boolean> | undefined;
  let closed = false;

  const load = async (): Promise<boolean> => {
    const row = await findCurrentParentKey(pool);
    let changed = false;
    if (row && row.id !== rowId) {
      token = new SecretToken(vault.open(row.sealed, parentKeyAad(row.id)));
      rowId = row.id;
      fingerprint = row.fingerprint ?? undefined;
      changed = true;
    }
    if (processId && options.report && !closed)
      await reportProcessCredential(pool, { processId, kind: options.report.kind, parentKeyId: rowId ?? null });
    return changed;
  };
  const refresh = (): Promise<boolean> => {
    // One read at a time: a burst of 401s makes one query, not hundreds.
    inFlight ??= load().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  if (options.bootstrap && !(await findCurrentParentKey(pool))) {
    const { imported, fingerprint: fp } = await importParentKeyToken(
      { pool, vault },
      {
        token: options.bootstrap,
        onlyIfNone: true,
        actor: 'system:bootstrap',
        reason: 'PLATFORM_API_KEY on first start',
      },
    );
    if (imported) await appendAudit(pool, { actor: 'system:bootstrap', action: 'parent_key.bootstrap', subject: fp });
  }
  await refresh();
  const timer = setInterval(() => {
    refresh().catch((error: unknown) => options.onError?.(error));
  }, options.refreshMs);
  timer.unref();

  return {
    get rowId() {
      return rowId;
    },
    get fingerprint() {
      return fingerprint;
    },
    processId,
    current: () => token,
    refresh,
    async refreshAfterUnauthorized(rejected) {
      if (token && token.reveal() !== rejected.reveal()) return token;
      await refresh();
      return token && token.reveal() !== rejected.reveal() ? token : undefined;
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await inFlight?.catch(() => undefined);
      if (processId) await forgetProcessCredential(pool, processId).catch(() => undefined);
    },
  };
}

/** For a one-shot command (the CLI): the current key once, no timer, no heartbeat. */
export async function readCurrentParentKey(deps: { pool: Pool; vault: Vault }): Promise<SecretToken | undefined> {
  return withTransaction(deps.pool, async (tx) => {
    const row = await findCurrentParentKey(tx);
    return row ? new SecretToken(deps.vault.open(row.sealed, parentKeyAad(row.id))) : undefined;
  });
}
