import { appendAudit } from '../../src/db/audit-store.js';
import {
  claimParentKeyCreateAttempt,
  findCurrentParentKey,
  findParentKey,
  insertCreatingParentKey,
  listLiveProcesses,
  listParentKeys,
  makeParentKeyCurrent,
  markParentKeyFailed,
  markParentKeyRevoked,
  parentKeyAad,
  setParentPlatformKeyId,
  storeCreatedParentKey,
} from '../../src/db/parent-keys-store.js';
import { FailureCode } from '../../src/domain/failures.js';
import {
  createPlatformClient,
  lastUseMoved,
  PlatformBusinessStateError,
  PlatformNotFoundError,
  type ApiKeyRecord,
} from '../../src/platform/index.js';
import { fingerprintToken } from '../../src/secrets/fingerprint.js';
import { sealedKeyId } from '../../src/secrets/vault.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, boundary } from '../failures.js';
import type { KeyUsage, LastUseExpectation } from './rotation.js';
import { attemptOfKeyName } from './issue-key.js';

/**
 * The steps of rotateParentKey: the parent's own platform key (svpk_), kept sealed in parent_keys. Every process
 * reads the current key from there (src/secrets/parent-key-source.ts) and reports the one it uses. Nothing here
 * returns or logs a token: only our row ids, platform key ids and fingerprints.
 */

/** A live process not yet on the new key: who it is and when it last reported (never a secret). */
export interface PendingProcess {
  processId: string;
  kind: string;
  /** The key record it reported using (our row id), or null before it loaded one. */
  parentKeyId: string | null;
  /** When it last reported (the database's clock, ISO). */
  lastReportAt: string;
}

export interface ParentKeyRef {
  rowId: string;
  platformKeyId: string | null;
  fingerprint: string | null;
}

export type CreateParentKeyResult =
  | { state: 'created'; key: ParentKeyRef }
  | { state: 'key_limit'; activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null }> };

function usageOf(key: ApiKeyRecord): KeyUsage {
  return {
    keyId: key.id,
    status: key.status,
    lastUsedAt: key.lastUsedAt ?? null,
    lastUseKnown: key.lastUseKnown,
    lastUse: key.lastUse,
    useCount: key.useCount ?? null,
  };
}

export function createParentKeyActivities(deps: ActivityDeps) {
  const { pool, platform, vault } = deps;
  const actorOf = (operator: string | null | undefined) => (operator ? `operator:${operator}` : 'worker');

  /** A client that calls with one given parent key row (the new key's verification read). */
  async function clientWith(rowId: string) {
    const row = await findParentKey(pool, rowId);
    if (!row?.sealed)
      throw activityFailure(FailureCode.SECRET_MISSING, `parent key record ${rowId} has no sealed secret`);
    const baseUrl = deps.parentKey?.baseUrl;
    if (!baseUrl)
      throw activityFailure(FailureCode.INVALID_INPUT, 'the worker has no platform base URL for parent key checks');
    return createPlatformClient({ baseUrl, platformKey: vault.open(row.sealed, parentKeyAad(row.id)) });
  }

  async function revokeParentKey(keyId: string, action: string): Promise<void> {
    await platform.revokePlatformKey({ keyId }).catch((error: unknown) => {
      if (!(error instanceof PlatformNotFoundError)) throw error;
    });
    await appendAudit(pool, { ...auditOrigin(), action, subject: keyId });
  }

  /** Active platform keys a rotation's create attempts made (`<keyName>-a<N>`; attempt 0 is the bare name). */
  async function revokeParentKeyAttempts(
    keyName: string,
    which: (attempt: number) => boolean,
    action: string,
  ): Promise<void> {
    const { keys } = await platform.listPlatformKeys({});
    for (const key of keys) {
      const attempt = key.name === keyName ? 0 : attemptOfKeyName(key.name, keyName);
      if (attempt !== null && which(attempt) && key.status !== 'revoked') await revokeParentKey(key.id, action);
    }
  }

  /** A record another attempt settled: its stored key, or a typed failure (retryable while still creating). */
  async function settledParentKey(rowId: string): Promise<CreateParentKeyResult> {
    const row = await findParentKey(pool, rowId);
    if (row && row.status !== 'creating' && row.status !== 'failed' && row.sealed)
      return {
        state: 'created',
        key: { rowId: row.id, platformKeyId: row.platformKeyId, fingerprint: row.fingerprint },
      };
    if (row?.status === 'creating')
      throw activityFailure(FailureCode.KEY_ATTEMPT_SUPERSEDED, 'a newer attempt of the parent key create is running', {
        retryable: true,
      });
    throw activityFailure(FailureCode.KEY_RECORD_STATE, `the new parent key's record is ${row?.status ?? 'missing'}`);
  }

  return {
    /** The key being replaced and a record for the new one (named after the run, to find a lost create's key). */
    beginParentKeyRotation: boundary(
      async (input: { runKey: string }): Promise<{ old: ParentKeyRef; newRowId: string; keyName: string }> => {
        const current = await findCurrentParentKey(pool);
        if (!current)
          throw activityFailure(
            FailureCode.NO_ACTIVE_KEY,
            'no current parent key in our records: run `tenantctl parent-key import` first',
          );
        const keyName = `orchestrator-${input.runKey}`;
        const created = await insertCreatingParentKey(pool, keyName);
        if (created.id === current.id)
          throw activityFailure(FailureCode.KEY_RECORD_STATE, 'the current key cannot be its own replacement');
        return {
          old: { rowId: current.id, platformKeyId: current.platformKeyId, fingerprint: current.fingerprint },
          newRowId: created.id,
          keyName,
        };
      },
    ),

    /**
     * Creates the new platform key and seals it the moment it arrives, fenced like a tenant key's create: each
     * attempt claims a number in the record and names its key `<keyName>-a<N>`; it stores only while it holds the
     * newest claim, else it revokes its own key. Keys of older attempts (which can no longer store them) are
     * revoked first: a lost response's key, whose token nobody holds.
     */
    createParentKeyOnPlatform: boundary(
      async (input: { rowId: string; keyName: string }): Promise<CreateParentKeyResult> => {
        const claim = await claimParentKeyCreateAttempt(pool, input.rowId);
        if (claim === undefined) return settledParentKey(input.rowId);
        await revokeParentKeyAttempts(input.keyName, (attempt) => attempt < claim, 'parent_key.orphan_revoked');
        const attemptName = `${input.keyName}-a${claim}`;
        let created;
        try {
          created = await platform.createPlatformKey({ name: attemptName });
        } catch (error) {
          if (error instanceof PlatformBusinessStateError && error.code === 'API_KEY_LIMIT_REACHED') {
            const { keys: now } = await platform.listPlatformKeys({});
            return {
              state: 'key_limit',
              activeKeys: now
                .filter((k) => k.status !== 'revoked')
                .map((k) => ({ id: k.id, name: k.name ?? null, lastUsedAt: k.lastUsedAt ?? null })),
            };
          }
          throw error; // ambiguous: a newer attempt revokes whatever this one may have created
        }
        const fingerprint = fingerprintToken(created.token.reveal());
        const sealed = vault.seal(created.token.reveal(), parentKeyAad(input.rowId));
        const stored = await storeCreatedParentKey(
          pool,
          {
            id: input.rowId,
            claim,
            platformKeyId: created.key.id,
            fingerprint,
            masterKeyId: sealedKeyId(sealed),
            sealed,
          },
          {
            ...auditOrigin(),
            action: 'parent_key.created',
            subject: created.key.id,
            details: { fingerprint, requestId: created.requestId ?? null },
          },
        );
        if (!stored) {
          // Fenced: a newer attempt claimed the record, or the rotation gave it up. This key can never be stored.
          await revokeParentKey(created.key.id, 'parent_key.superseded_revoked');
          return settledParentKey(input.rowId);
        }
        if (claim > 1)
          await revokeParentKeyAttempts(input.keyName, (attempt) => attempt < claim, 'parent_key.orphan_revoked');
        return { state: 'created', key: { rowId: input.rowId, platformKeyId: created.key.id, fingerprint } };
      },
    ),

    /** One read made with the given key: proof it works before (and after) every process relies on it. */
    verifyParentKey: boundary(async (input: { rowId: string }): Promise<{ requestId: string | null }> => {
      const client = await clientWith(input.rowId);
      const { requestId } = await client.listPlatformKeys({});
      await appendAudit(pool, {
        ...auditOrigin(),
        action: 'parent_key.verified',
        subject: input.rowId,
        details: { requestId: requestId ?? null },
      });
      return { requestId: requestId ?? null };
    }),

    makeParentKeyCurrent: boundary(async (input: { rowId: string }): Promise<void> => {
      await makeParentKeyCurrent(pool, input.rowId, {
        ...auditOrigin(),
        action: 'parent_key.made_current',
        subject: input.rowId,
      });
    }),

    /**
     * Which live processes (reported within staleAfterMs) use which key; the others are not waited for. `pending`
     * names those not yet on the new key with their last report (process ids and times, never a secret).
     */
    observeParentKeySwitch: boundary(
      async (input: {
        rowId: string;
        staleAfterMs: number;
      }): Promise<{ live: number; stragglers: string[]; pending: PendingProcess[] }> => {
        const live = await listLiveProcesses(pool, input.staleAfterMs);
        const relevant = live.filter((p) => p.kind !== 'cli');
        const behind = relevant.filter((p) => p.parentKeyId !== input.rowId);
        const now = Date.now();
        return {
          live: relevant.length,
          stragglers: behind.map((p) => `${p.processId} (${p.kind})`),
          pending: behind.map((p) => ({
            processId: p.processId,
            kind: p.kind,
            parentKeyId: p.parentKeyId,
            lastReportAt: new Date(now - p.seenAgoMs).toISOString(),
          })),
        };
      },
    ),

    /**
     * The old key as the platform's list shows it, for the quiet gate. Its platform id is the one in our records
     * (recorded at import with --key-id, named by an operator with `parent-key identify`, or known because we
     * created it); else, for an imported key, the one active key that is none of ours with a known id (recorded
     * then) — but only with `inferSingle`, which the rotation sets for its first look, made before anything
     * changes: that listing is authenticated by the old key itself, so the old key is active and among the
     * unknown keys, and a single unknown key can only be it. Later looks (made with the new key) never infer:
     * were the old key revoked elsewhere meanwhile, the one unknown key left would be another service's.
     * When it is not inferred, `ambiguous` lists the keys that could be it: an operator names it.
     */
    observeOldParentKey: boundary(
      async (input: {
        old: ParentKeyRef;
        newPlatformKeyId: string;
        inferSingle?: boolean;
      }): Promise<{ usage: KeyUsage | null; platformKeyId: string | null; ambiguous: string[] }> => {
        const { keys } = await platform.listPlatformKeys({});
        let id = input.old.platformKeyId ?? (await findParentKey(pool, input.old.rowId))?.platformKeyId ?? null;
        if (!id) {
          const known = new Set((await listParentKeys(pool)).map((r) => r.platformKeyId).filter(Boolean));
          if (input.newPlatformKeyId) known.add(input.newPlatformKeyId);
          const candidates = keys.filter((k) => k.status !== 'revoked' && !known.has(k.id));
          if (candidates.length !== 1 || input.inferSingle !== true)
            return { usage: null, platformKeyId: null, ambiguous: candidates.map((k) => k.id) };
          id = candidates[0]!.id;
          await setParentPlatformKeyId(pool, input.old.rowId, id);
        }
        const key = keys.find((k) => k.id === id);
        return { usage: key ? usageOf(key) : null, platformKeyId: id, ambiguous: [] };
      },
    ),

    /**
     * Revokes the old key (its record becomes `revoked`, audited). With `expect`, the list is read again first and
     * any use since the gate passed refuses the revoke (KEY_IN_USE): no key revoked while in use.
     */
    revokeOldParentKey: boundary(
      async (input: {
        rowId: string;
        /** null: no active platform key could be the old one (already revoked there): our record only. */
        platformKeyId: string | null;
        expect: LastUseExpectation | null;
        operator: string | null;
        why: string;
      }): Promise<{ result: 'revoked' | 'already_gone' }> => {
        if (input.platformKeyId === null) {
          await markParentKeyRevoked(pool, input.rowId, {
            ...auditOrigin(),
            actor: actorOf(input.operator),
            action: 'parent_key.revoked',
            subject: input.rowId,
            details: { why: input.why, result: 'already_gone' },
          });
          return { result: 'already_gone' };
        }
        if (input.expect) {
          const { keys } = await platform.listPlatformKeys({});
          const now = keys.find((k) => k.id === input.platformKeyId);
          if (
            now &&
            now.status !== 'revoked' &&
            lastUseMoved(input.expect.lastUse, now.lastUse, input.expect.useCount ?? undefined, now.useCount)
          )
            throw activityFailure(
              FailureCode.KEY_IN_USE,
              `parent key ${input.platformKeyId} was used after the quiet gate passed: not revoked`,
            );
        }
        let result: 'revoked' | 'already_gone' = 'revoked';
        try {
          await platform.revokePlatformKey({ keyId: input.platformKeyId });
        } catch (error) {
          if (!(error instanceof PlatformNotFoundError)) throw error;
          result = 'already_gone';
        }
        await markParentKeyRevoked(pool, input.rowId, {
          ...auditOrigin(),
          actor: actorOf(input.operator),
          action: 'parent_key.revoked',
          subject: input.platformKeyId,
          details: { why: input.why, result },
        });
        return { result };
      },
    ),

    /**
     * Rolls a rotation back (abort, cancel, failure before the old key was revoked): the old key is current again
     * and the new one, if it was created, is revoked. Processes on the new key switch back on their next refresh, or
     * at once on a 401 (one retry with the old key).
     */
    rollBackParentKeyRotation: boundary(
      async (input: { oldRowId: string; newRowId: string; keyName: string; operator: string | null; why: string }) => {
        const old = await findParentKey(pool, input.oldRowId);
        if (old?.status === 'revoked') return { rolledBack: false };
        if (old?.status !== 'current')
          await makeParentKeyCurrent(pool, input.oldRowId, {
            ...auditOrigin(),
            actor: actorOf(input.operator),
            action: 'parent_key.rollback',
            subject: input.oldRowId,
            details: { why: input.why },
          });
        // The record first: a create attempt still running is then refused its store (and revokes its own key).
        const fresh = await findParentKey(pool, input.newRowId);
        if (fresh?.status === 'creating') await markParentKeyFailed(pool, input.newRowId);
        const { keys } = await platform.listPlatformKeys({});
        for (const key of keys) {
          const made = key.name === input.keyName || attemptOfKeyName(key.name, input.keyName) !== null;
          if (made && key.status !== 'revoked')
            await platform.revokePlatformKey({ keyId: key.id }).catch((error: unknown) => {
              if (!(error instanceof PlatformNotFoundError)) throw error;
            });
        }
        if (fresh && fresh.status !== 'creating')
          await markParentKeyRevoked(pool, input.newRowId, {
            ...auditOrigin(),
            actor: actorOf(input.operator),
            action: 'parent_key.new_key_revoked',
            subject: fresh.platformKeyId ?? input.newRowId,
            details: { why: input.why },
          });
        return { rolledBack: true };
      },
    ),
  };
}
