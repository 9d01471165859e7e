import { appendAudit } from '../../src/db/audit-store.js';
import {
  beginKeyCreateAttempt,
  claimKeyRecord,
  findKeyWithSecret,
  markKeyVerifiedAudited,
  storeIssuedKey,
  type TenantKeyRow,
} from '../../src/db/tenant-keys-store.js';
import { PlatformBusinessStateError, PlatformNotFoundError, type ApiKeyRecord } from '../../src/platform/index.js';
import { fingerprintToken } from '../../src/secrets/fingerprint.js';
import { sealedKeyId, tenantTokenAad } from '../../src/secrets/vault.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, assertTenantOpen, boundary } from '../failures.js';
import { keyNamePrefix } from '../idempotency-keys.js';
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

export interface VerifyKeyInput {
  externalRef: string;
  slot: string;
  generation: number;
}

export function createKeyActivities(deps: ActivityDeps) {
  const { pool, platform, vault } = deps;

  /**
   * Keys named by an earlier attempt of this slot generation whose response we lost: the token went
   * with the response, so the key can never be used by us — revoke it rather than leave an orphan.
   */
  async function revokeOrphans(input: IssueKeyInput, keep: string | null): Promise<string[]> {
    const prefix = `${keyNamePrefix(input.slot, input.generation)}-a`;
    const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
    const orphans = keys.filter(
      (k: ApiKeyRecord) => k.name?.startsWith(prefix) && k.id !== keep && k.status !== 'revoked',
    );
    for (const orphan of orphans) {
      try {
        await platform.revokeTenantKey({ subaccountId: input.subaccountId, keyId: orphan.id });
      } catch (error) {
        if (!(error instanceof PlatformNotFoundError)) throw error;
      }
      await appendAudit(pool, {
        ...auditOrigin(),
        action: 'key.orphan_revoked',
        externalRef: input.externalRef,
        subject: orphan.id,
        details: { name: orphan.name ?? null },
      });
    }
    return orphans.map((o) => o.id);
  }

  /** What the issue stored this time: the verification in the same activity need not read it back. */
  interface Stored {
    id: string;
    platformKeyId: string;
    sealed: string;
  }

  async function issueKey(input: IssueKeyInput): Promise<IssueKeyResult> {
    return (await issue(input)).result;
  }

  async function issue(input: IssueKeyInput): Promise<{ result: IssueKeyResult; stored?: Stored }> {
    const prefix = keyNamePrefix(input.slot, input.generation);
    // The tenant's check and the record (with its first attempt when new) in one statement.
    const claimed = await claimKeyRecord(
      pool,
      { externalRef: input.externalRef, slot: input.slot, generation: input.generation, keyName: prefix },
      CLOSING_STATES,
    );
    if (!claimed) {
      await assertTenantOpen(pool, input.externalRef); // throws, naming the tenant's state
      throw activityFailure(FailureCode.TENANT_CLOSED, `tenant ${input.externalRef} is closing: no new keys`);
    }
    let record: TenantKeyRow = claimed;
    if (record.status === 'active') {
      const { platformKeyId, fingerprint } = record;
      return { result: { state: 'issued', keyId: platformKeyId!, fingerprint: fingerprint!, orphansRevoked: [] } };
    }
    if (record.status !== 'creating') {
      throw activityFailure(
        FailureCode.KEY_RECORD_STATE,
        `key ${input.slot} generation ${input.generation} of ${input.externalRef} is ${record.status}`,
      );
    }
    let orphansBefore: string[] = [];
    if (!claimed.fresh) {
      orphansBefore = record.createAttempts > 0 ? await revokeOrphans(input, null) : [];
      record = await beginKeyCreateAttempt(pool, record.id, prefix);
    }

    let created;
    try {
      created = await platform.createTenantKey({ subaccountId: input.subaccountId, name: record.keyName });
    } catch (error) {
      if (error instanceof PlatformBusinessStateError && error.code === 'API_KEY_LIMIT_REACHED') {
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        return {
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
      throw error; // ambiguous: the next attempt revokes whatever this one may have created
    }
    // Sealed and recorded before anything else can fail: from here the token exists only sealed.
    const keyId = created.key.id;
    const fingerprint = fingerprintToken(created.token.reveal());
    const sealed = vault.seal(created.token.reveal(), tenantTokenAad({ externalRef: input.externalRef, keyId }));
    // The key, its audit row and (when this call activated it) its event, in one statement.
    await storeIssuedKey(
      pool,
      { id: record.id, platformKeyId: keyId, fingerprint, masterKeyId: sealedKeyId(sealed), sealed },
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
    // A slow earlier attempt may have landed after we listed: look once more on the retry path.
    const orphansAfter = record.createAttempts > 1 ? await revokeOrphans(input, keyId) : [];
    return {
      result: { state: 'issued', keyId, fingerprint, orphansRevoked: [...orphansBefore, ...orphansAfter] },
      stored: { id: record.id, platformKeyId: keyId, sealed },
    };
  }

  /**
   * One authenticated call with the new key, proving it works before the tenant is called active. The token is
   * opened from its sealed copy: the stored one, or (`stored`, in the same activity as the issue) the copy
   * just stored, so the proof covers the seal that `key reveal` and the deployers will open.
   */
  async function verifyKey(
    input: VerifyKeyInput,
    stored?: Stored,
  ): Promise<{ verified: true; requestId: string | null }> {
    const record = stored ?? (await storedKey(input));
    const token = vault.open(
      record.sealed,
      tenantTokenAad({ externalRef: input.externalRef, keyId: record.platformKeyId }),
    );
    const { requestId } = await platform.listProjects({ auth: { kind: 'tenant-key', token } });
    await markKeyVerifiedAudited(pool, record.id, {
      ...auditOrigin(),
      action: 'key.verified',
      externalRef: input.externalRef,
      subject: record.platformKeyId,
      details: { requestId: requestId ?? null },
    });
    return { verified: true, requestId: requestId ?? null };
  }

  async function storedKey(input: VerifyKeyInput): Promise<Stored> {
    const record = await findKeyWithSecret(pool, input.externalRef, input.slot, input.generation);
    if (!record?.platformKeyId || !record.sealed) {
      throw activityFailure(
        FailureCode.SECRET_MISSING,
        `no stored secret for key ${input.slot} generation ${input.generation} of ${input.externalRef}`,
      );
    }
    return { id: record.id, platformKeyId: record.platformKeyId, sealed: record.sealed };
  }

  return {
    issueTenantKey: boundary(issueKey),
    verifyTenantKey: boundary((input: VerifyKeyInput) => verifyKey(input)),
    /**
     * Both, as one local activity: the onboarding's key branch
     * (one workflow activation, task and marker fewer on its critical path), the verification opening the
     * sealed copy the issue just stored rather than reading it back. A retry after the issue finds the key
     * stored and verifies the stored copy; at the key limit nothing is verified.
     */
    issueAndVerifyTenantKey: boundary(async (input: IssueKeyInput): Promise<IssueAndVerifyKeyResult> => {
      const { result, stored } = await issue(input);
      if (result.state !== 'issued') return result;
      await verifyKey(input, stored);
      return { ...result, verified: true };
    }),
  };
}
