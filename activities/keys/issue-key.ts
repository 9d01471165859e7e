import { appendAudit } from '../../src/db/audit-store.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  claimKeyCreateAttempt,
  claimKeyProof,
  claimKeyRecord,
  findKeyRecord,
  findKeyRecordOfId,
  findKeyWithSecret,
  keyProofStanding,
  markKeyVerifiedAudited,
  rejectIssuedKey,
  storeIssuedKey,
  type TenantKeyRow,
} from '../../src/db/tenant-keys-store.js';
import {
  PlatformBusinessStateError,
  PlatformDefiniteError,
  PlatformErrorCode,
  PlatformNotFoundError,
  type ApiKeyRecord,
} from '../../src/platform/index.js';
import { fingerprintToken } from '../../src/secrets/fingerprint.js';
import { sealedKeyId, tenantTokenAad } from '../../src/secrets/vault.js';
import { activityAttempt, auditOrigin, type ActivityDeps, type KeyProofOptions } from '../context.js';
import { activityFailure, assertTenantOpen, boundary } from '../failures.js';
import { keyNamePrefix } from '../idempotency-keys.js';
import { withTenantRecord } from '../restored-records.js';
import { FailureCode } from '../../src/domain/failures.js';
import { CLOSING_STATES } from '../../src/domain/tenant-rules.js';

export interface IssueKeyInput {
  externalRef: string;
  subaccountId: string;
  slot: string;
  generation: number;
}

/** Never the token: only what identifies the key. */
export type IssueKeyResult =
  | { state: 'issued'; keyId: string; fingerprint: string; orphansRevoked: string[] }
  | {
      state: 'key_limit';
      activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null; lastUseKnown: boolean }>;
    };

/** The onboarding's key step: at the key limit as issueTenantKey answers, or issued and verified. */
export type IssueAndVerifyKeyResult =
  Extract<IssueKeyResult, { state: 'key_limit' }> | (Extract<IssueKeyResult, { state: 'issued' }> & { verified: true });

export const DEFAULT_KEY_PROOF: KeyProofOptions = { retryDelaysMs: [500, 1_000, 2_000, 4_000], maxRejectedKeys: 3 };

/** The attempt number in a key's name (`<prefix>-a<N>`), or null for a name that is none of this generation's. */
export function attemptOfKeyName(name: string | null | undefined, prefix: string): number | null {
  if (!name?.startsWith(`${prefix}-a`)) return null;
  const digits = name.slice(prefix.length + 2);
  return /^[1-9]\d{0,8}$/.test(digits) ? Number(digits) : null;
}

export interface VerifyKeyInput {
  externalRef: string;
  slot: string;
  generation: number;
}

export function createKeyActivities(deps: ActivityDeps) {
  const { pool, platform, vault } = deps;
  const proof = deps.keyProof ?? DEFAULT_KEY_PROOF;

  /**
   * The fenced orphan sweep: keys of this slot generation made by attempts OLDER than `claim` (the caller's claim,
   * the newest when it took it). Such an attempt has lost: its store is refused by the fence, so its key can never
   * be stored or used by us, and if its response was lost nobody holds the token — revoke it rather than leave an
   * orphan. A key of the caller's own attempt or of a newer one (a live sibling may still store it) is never touched.
   */
  async function revokeOrphans(input: IssueKeyInput, claim: number): Promise<string[]> {
    const prefix = keyNamePrefix(input.slot, input.generation);
    const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
    const orphans = keys.filter((k: ApiKeyRecord) => {
      const attempt = attemptOfKeyName(k.name, prefix);
      return attempt !== null && attempt < claim && k.status !== 'revoked';
    });
    for (const orphan of orphans) await revokeMadeKey(input, orphan.id, 'key.orphan_revoked', orphan.name ?? null);
    return orphans.map((o) => o.id);
  }

  /** The highest create attempt the platform shows a key of for this generation's name (0: none). */
  async function highestMadeAttempt(input: IssueKeyInput, prefix: string): Promise<number> {
    const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
    return Math.max(0, ...keys.map((k: ApiKeyRecord) => attemptOfKeyName(k.name, prefix) ?? 0));
  }

  async function revokeMadeKey(input: IssueKeyInput, keyId: string, action: string, name: string | null) {
    try {
      await platform.revokeTenantKey({ subaccountId: input.subaccountId, keyId });
    } catch (error) {
      if (!(error instanceof PlatformNotFoundError)) throw error;
    }
    await appendAudit(pool, {
      ...auditOrigin(),
      action,
      externalRef: input.externalRef,
      subject: keyId,
      details: { name },
    });
  }

  /** What the issue stored this time: the verification in the same activity need not read it back. */
  interface Stored {
    id: string;
    platformKeyId: string;
    sealed: string;
  }

  const currentRecord = (input: IssueKeyInput) => findKeyRecord(pool, input.externalRef, input.slot, input.generation);

  async function issueKey(input: IssueKeyInput): Promise<IssueKeyResult> {
    return (await issue(input)).result;
  }

  /** A record as another attempt may have left it: active gives its key, anything else a typed failure. */
  function settledRecord(input: IssueKeyInput, record: TenantKeyRow | undefined): { result: IssueKeyResult } {
    if (record?.status === 'active' && record.platformKeyId && record.fingerprint) {
      return {
        result: {
          state: 'issued',
          keyId: record.platformKeyId,
          fingerprint: record.fingerprint,
          orphansRevoked: [],
        },
      };
    }
    if (record?.status === 'creating') {
      throw activityFailure(
        FailureCode.KEY_ATTEMPT_SUPERSEDED,
        `a newer attempt of key ${input.slot} generation ${input.generation} of ${input.externalRef} is running`,
        { retryable: true },
      );
    }
    throw activityFailure(
      FailureCode.KEY_RECORD_STATE,
      `key ${input.slot} generation ${input.generation} of ${input.externalRef} is ${record?.status ?? 'missing'}`,
    );
  }

  /**
   * How this attempt's issue ended: `stored` (it stored the key, holding claim `claim`), `found` (the record held a
   * key when it began: a retry, or a sibling's stored key) or `fenced` (a sibling claimed or stored while it ran).
   */
  type Issued = { result: IssueKeyResult } & (
    | { how: 'stored'; stored: Stored; claim: number }
    | { how: 'found' | 'fenced'; recordId: string | null }
    | { how: 'key_limit' }
  );

  async function issue(input: IssueKeyInput): Promise<Issued> {
    const prefix = keyNamePrefix(input.slot, input.generation);
    // The tenant's check and the record (with its first attempt claimed when new) in one statement.
    // The tenant's record gone under a running onboarding (a restore): written again from the run, then claimed.
    const claimed = await withTenantRecord(deps, input, () =>
      claimKeyRecord(
        pool,
        { externalRef: input.externalRef, slot: input.slot, generation: input.generation, keyName: prefix },
        CLOSING_STATES,
      ),
    );
    if (!claimed) {
      await assertTenantOpen(pool, input.externalRef); // throws, naming the tenant's state
      throw activityFailure(FailureCode.TENANT_CLOSED, `tenant ${input.externalRef} is closing: no new keys`);
    }
    if (claimed.status !== 'creating') return { ...settledRecord(input, claimed), how: 'found', recordId: claimed.id };
    let record: TenantKeyRow = claimed;
    // A record new to a retry of this step, or a restored tenant's (restoreOnboardingTenant): the records lost the
    // earlier claims (a restore), whose creates may have made keys no record holds. This claim goes past them, so
    // they are revoked below as any older attempt's are. A first attempt's fresh record costs no platform call.
    const lostClaims = claimed.tenantRestored || (claimed.fresh && activityAttempt() > 1);
    const madeBefore = lostClaims ? await highestMadeAttempt(input, prefix) : 0;
    if (!claimed.fresh || madeBefore > 0) {
      // This attempt's fencing token: the next claim, taken only while the record is still creating.
      const mine = await claimKeyCreateAttempt(pool, record.id, prefix, madeBefore);
      // A sibling stored (or gave up) between our two statements: it is live, and proves its own key.
      if (!mine) return { ...settledRecord(input, await currentRecord(input)), how: 'fenced', recordId: record.id };
      record = mine;
    }
    const claim = record.createAttempts;
    const orphansBefore = claim > 1 ? await revokeOrphans(input, claim) : [];

    let created;
    try {
      created = await platform.createTenantKey({ subaccountId: input.subaccountId, name: record.keyName });
    } catch (error) {
      if (error instanceof PlatformBusinessStateError && error.code === 'API_KEY_LIMIT_REACHED') {
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        return {
          how: 'key_limit',
          result: {
            state: 'key_limit',
            activeKeys: keys
              .filter((k) => k.status !== 'revoked')
              .map((k) => ({
                id: k.id,
                name: k.name ?? null,
                lastUsedAt: k.lastUsedAt ?? null,
                lastUseKnown: k.lastUseKnown,
              })),
          },
        };
      }
      throw error; // ambiguous: a newer attempt revokes whatever this one may have created
    }
    // Sealed and recorded before anything else can fail: from here the token exists only sealed.
    const keyId = created.key.id;
    const fingerprint = fingerprintToken(created.token.reveal());
    const sealed = vault.seal(created.token.reveal(), tenantTokenAad({ externalRef: input.externalRef, keyId }));
    // The key, its secret, its audit row and its event, in one statement, only while this attempt holds the
    // newest claim.
    const { activated } = await storeIssuedKey(
      pool,
      { id: record.id, claim, platformKeyId: keyId, fingerprint, masterKeyId: sealedKeyId(sealed), sealed },
      {
        ...auditOrigin(),
        action: 'key.issued',
        externalRef: input.externalRef,
        subject: keyId,
        details: {
          slot: input.slot,
          generation: input.generation,
          fingerprint,
          requestId: created.requestId ?? null,
        },
      },
      {
        type: 'key.issued',
        externalRef: input.externalRef,
        data: { externalRef: input.externalRef, keyId, slot: input.slot, generation: input.generation, fingerprint },
      },
    );
    if (!activated) {
      // Fenced: a newer attempt claimed the record (or stored its own key) while this one ran. Its key can never be
      // stored: revoke it here, and answer with what the record holds now.
      await revokeMadeKey(input, keyId, 'key.superseded_revoked', record.keyName);
      return { ...settledRecord(input, await currentRecord(input)), how: 'fenced', recordId: record.id };
    }
    // An older attempt's create may have landed after we listed: look once more on the retry path.
    const orphansAfter = claim > 1 ? await revokeOrphans(input, claim) : [];
    return {
      result: { state: 'issued', keyId, fingerprint, orphansRevoked: [...orphansBefore, ...orphansAfter] },
      how: 'stored',
      stored: { id: record.id, platformKeyId: keyId, sealed },
      claim,
    };
  }

  /**
   * One authenticated call with the key; a 401 is retried after each of the proof's delays (a real platform may
   * take seconds to accept a key it has just made). Returns null when the key is still refused at the end.
   * With `standing` (the attempt's claim), every call after the first (made at once, the claim just taken or the
   * key just stored) asks first where the proof stands: a proof another attempt took over or finished is never made
   * late (a late use of the key would hold the next rotation's quiet gate).
   */
  async function prove(
    stored: Stored,
    externalRef: string,
    standing?: { claim: number },
  ): Promise<{ requestId: string | null } | 'verified' | null> {
    const token = vault.open(stored.sealed, tenantTokenAad({ externalRef, keyId: stored.platformKeyId }));
    for (let round = 0; ; round++) {
      if (standing && round > 0) {
        const now = await keyProofStanding(pool, {
          id: stored.id,
          claim: standing.claim,
          platformKeyId: stored.platformKeyId,
        });
        if (now === 'verified') return 'verified';
        if (now === 'lost') throw superseded(externalRef, stored.platformKeyId);
      }
      try {
        const { requestId } = await platform.listProjects({ auth: { kind: 'tenant-key', token } });
        return { requestId: requestId ?? null };
      } catch (error) {
        const refused = error instanceof PlatformDefiniteError && error.code === PlatformErrorCode.UNAUTHENTICATED;
        if (!refused) throw error;
        const delay = proof.retryDelaysMs[round];
        if (delay === undefined) return null;
        await sleep(delay);
      }
    }
  }

  function superseded(externalRef: string, keyId: string) {
    return activityFailure(
      FailureCode.KEY_ATTEMPT_SUPERSEDED,
      `key ${keyId} of ${externalRef} is proven by another attempt`,
      { retryable: true },
    );
  }

  async function markVerified(input: VerifyKeyInput, stored: Stored, requestId: string | null): Promise<void> {
    const verified = await markKeyVerifiedAudited(pool, stored.id, stored.platformKeyId, {
      ...auditOrigin(),
      action: 'key.verified',
      externalRef: input.externalRef,
      subject: stored.platformKeyId,
      details: { requestId },
    });
    if (!verified) {
      // A sibling attempt rejected this key meanwhile (it revokes it): the next attempt finds what it left.
      throw activityFailure(
        FailureCode.KEY_ATTEMPT_SUPERSEDED,
        `key ${stored.platformKeyId} of ${input.externalRef} is no longer the record's key`,
        { retryable: true },
      );
    }
  }

  /**
   * One authenticated call with the stored key, proving it works before the tenant is called active (and, in a
   * rotation, after its deploy). A key still refused after the proof's retries is KEY_REJECTED, retryable: the
   * step's retry policy gives a slow platform more time, and the run's own handling decides after that. Never
   * UNAUTHENTICATED, which ends a run only for the parent's own credentials.
   */
  async function verifyKey(input: VerifyKeyInput): Promise<{ verified: true; requestId: string | null }> {
    const stored = await storedKey(input);
    const proven = await prove(stored, input.externalRef);
    if (!proven || proven === 'verified') {
      throw activityFailure(
        FailureCode.KEY_REJECTED,
        `key ${stored.platformKeyId} (${input.slot} generation ${input.generation} of ${input.externalRef}) was ` +
          `refused (401) at its first use`,
        { retryable: true },
      );
    }
    await markVerified(input, stored, proven.requestId);
    return { verified: true, requestId: proven.requestId };
  }

  /**
   * The onboarding's key step: issue (or find the stored key), then prove it with the copy just sealed (so the
   * proof covers the seal `key reveal` and the deployers open). A key refused at its first use is revoked and its
   * record goes back to `creating`: the retry issues the next attempt's key, at most maxRejectedKeys times.
   */
  async function issueAndVerify(input: IssueKeyInput): Promise<IssueAndVerifyKeyResult> {
    const issued = await issue(input);
    const { result } = issued;
    if (result.state !== 'issued' || issued.how === 'key_limit') return result as IssueAndVerifyKeyResult;
    // Who proves the key: the attempt that stored it, at once; an attempt that found it stored and unverified (its
    // storer died) takes the proof over with a claim; an attempt a sibling fenced never uses the key (the sibling
    // proves it), so a frozen attempt that wakes late cannot use a key the workflow has moved past.
    let stored: Stored;
    let claim: number;
    if (issued.how === 'stored') {
      ({ stored, claim } = issued);
    } else {
      const record = issued.recordId ? await findKeyRecordOfId(pool, issued.recordId) : undefined;
      if (record?.status === 'active' && record.verifiedAt && record.platformKeyId === result.keyId)
        return { ...result, verified: true };
      if (issued.how === 'fenced' || !record) throw superseded(input.externalRef, result.keyId);
      const taken = await claimKeyProof(pool, record.id);
      if (!taken?.sealed) throw superseded(input.externalRef, result.keyId);
      stored = { id: record.id, platformKeyId: taken.platformKeyId, sealed: taken.sealed };
      claim = taken.claim;
    }
    const proven = await prove(stored, input.externalRef, { claim });
    if (proven === 'verified') return { ...result, verified: true };
    if (proven) {
      await markVerified(input, stored, proven.requestId);
      return { ...result, verified: true };
    }
    const { rejected, rejectedKeys } = await rejectIssuedKey(
      pool,
      { id: stored.id, platformKeyId: stored.platformKeyId, claim },
      {
        ...auditOrigin(),
        action: 'key.rejected',
        externalRef: input.externalRef,
        subject: stored.platformKeyId,
        details: { slot: input.slot, generation: input.generation, reason: 'refused (401) at its first use' },
      },
    );
    if (!rejected) {
      // A sibling verified it (it works after all), took the proof over, or rejected it first (and revokes it):
      // never revoke it here.
      throw superseded(input.externalRef, stored.platformKeyId);
    }
    await revokeMadeKey(input, stored.platformKeyId, 'key.rejected_revoked', null);
    const final = rejectedKeys >= proof.maxRejectedKeys;
    throw activityFailure(
      FailureCode.KEY_REJECTED,
      `key ${stored.platformKeyId} of ${input.externalRef} was refused (401) at its first use and revoked ` +
        `(${rejectedKeys} of at most ${proof.maxRejectedKeys} new keys refused)` +
        (final ? '' : ': the next attempt issues another'),
      { retryable: !final, details: { rejectedKeys, maxRejectedKeys: proof.maxRejectedKeys } },
    );
  }

  /** The stored key of a record, for a proof in its own step (a rotation's or adoption's verify). */
  async function storedKey(input: VerifyKeyInput): Promise<Stored> {
    const record = await findKeyWithSecret(pool, input.externalRef, input.slot, input.generation);
    if (!record?.platformKeyId || !record.sealed) {
      throw activityFailure(
        FailureCode.SECRET_MISSING,
        `no stored secret for key ${input.slot} generation ${input.generation} of ${input.externalRef}` +
          (record ? ` (record ${record.status})` : ''),
      );
    }
    return { id: record.id, platformKeyId: record.platformKeyId, sealed: record.sealed };
  }

  return {
    issueTenantKey: boundary(issueKey),
    verifyTenantKey: boundary(verifyKey),
    /**
     * Both, as one local activity: the onboarding's key branch (one workflow activation, task and marker fewer
     * on its critical path). A retry after the issue finds the key stored and verifies the stored copy; at the
     * key limit nothing is verified.
     */
    issueAndVerifyTenantKey: boundary(issueAndVerify),
  };
}
