import { appendAudit } from '../../src/db/audit-store.js';
import { replaceSnapshot } from '../../src/db/drift-checks-store.js';
import { findFinding, markFindingFixed } from '../../src/db/drift-findings-store.js';
import { withTransaction } from '../../src/db/pool.js';
import { listKeyRecords } from '../../src/db/tenant-keys-store.js';
import type { PlatformKey, PlatformWallet } from './compare.js';
import { OUR_KEY_NAME } from '../../src/domain/drift-kinds.js';
import { DEFAULT_DRIFT_OPTIONS } from './options.js';
import {
  lastUseMoved,
  PlatformNotFoundError,
  PlatformTenantStateError,
  type ApiKeyRecord,
} from '../../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { boundary } from '../failures.js';
import { emitFindingEvent } from './finding-events.js';

/**
 * Drift's platform reads and its one platform fix. They run on the platform task queue (the same
 * server-side rate limit as fleet rotation) and make at most two requests each in the normal case
 * (a tenant's key list and wallet; a key list and a revoke), like rotation's activities.
 */
export interface TenantObservation {
  /** The sub-account vanished between the snapshot and this read. */
  gone: boolean;
  keys?: PlatformKey[];
  wallet?: PlatformWallet;
  projectCount?: number | null;
}

function toPlatformKey(k: ApiKeyRecord): PlatformKey {
  return {
    id: k.id,
    name: k.name ?? null,
    status: k.status,
    createdAt: k.createdAt ?? null,
    lastUsedAt: k.lastUsedAt ?? null,
    lastUseKnown: k.lastUseKnown,
    lastUse: k.lastUse,
  };
}

export function createDriftPlatformActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  const options = deps.drift ?? DEFAULT_DRIFT_OPTIONS;
  const lister = options.listPlatform ?? platform;

  return {
    /** The parent's whole sub-account list, into the check's snapshot (paged and paced by the lister). */
    snapshotSubaccounts: boundary(
      async (input: { checkId: string }): Promise<{ count: number; withoutExternalRef: number }> => {
        const { subaccounts } = await lister.listSubaccounts();
        await replaceSnapshot(
          pool,
          input.checkId,
          subaccounts.map((s) => ({
            subaccountId: s.id,
            externalRef: s.externalRef ?? null,
            status: s.status,
            rawStatus: s.rawStatus ?? null,
          })),
        );
        return {
          count: subaccounts.length,
          withoutExternalRef: subaccounts.filter((s) => s.externalRef === undefined).length,
        };
      },
    ),

    /** One tenant's keys and wallet; its projects only when asked (a record that says it is over). */
    observeTenant: boundary(
      async (input: { subaccountId: string; withProjects: boolean }): Promise<TenantObservation> => {
        try {
          const [{ keys }, { wallet }] = await Promise.all([
            platform.listTenantKeys({ subaccountId: input.subaccountId }),
            platform.getWallet({ subaccountId: input.subaccountId }),
          ]);
          const observation: TenantObservation = {
            gone: false,
            keys: keys.map(toPlatformKey),
            wallet: {
              balanceMicroUsd: wallet.balanceKnown ? (wallet.balanceMicroUsd ?? null) : null,
              transfers: wallet.transfers
                ? wallet.transfers.map((t) => ({
                    id: t.id ?? null,
                    idempotencyKey: t.idempotencyKey ?? null,
                    amountMicroUsd: t.amountMicroUsd ?? null,
                  }))
                : null,
            },
          };
          if (input.withProjects) {
            observation.projectCount = await platform
              .listProjects({ auth: { kind: 'platform', subaccountId: input.subaccountId } })
              .then((r) => r.projects.length)
              .catch((error: unknown) => {
                // A suspended tenant answers resource calls with SUBACCOUNT_SUSPENDED: count unknown, not a failure.
                if (error instanceof PlatformTenantStateError) return null;
                throw error;
              });
          }
          return observation;
        } catch (error) {
          if (error instanceof PlatformNotFoundError) return { gone: true };
          throw error;
        }
      },
    ),

    /**
     * The revoke_orphan_key fix. Looks again first (the key may have been used or recorded since the
     * check saw it); applies and audits once: the finding's fixed_at is the guard, a repeated revoke
     * is harmless on the platform.
     */
    revokeOrphanKey: boundary(
      async (input: {
        findingId: string;
        quietPeriodMs: number | null;
      }): Promise<{ outcome: 'revoked' | 'already_fixed' | 'no_longer_safe'; why?: string }> => {
        const finding = await findFinding(pool, input.findingId);
        if (
          !finding ||
          finding.fixedAt ||
          finding.kind !== 'key_orphan' ||
          !finding.subaccountId ||
          !finding.externalRef
        )
          return { outcome: 'already_fixed' };
        const { keys } = await platform.listTenantKeys({ subaccountId: finding.subaccountId });
        const key = keys.find((k) => k.id === finding.subject);
        const known = (await listKeyRecords(pool, finding.externalRef)).some(
          (r) => r.platformKeyId === finding.subject,
        );
        const since = key?.lastUsedAt ?? key?.createdAt;
        const quietPeriodMs = input.quietPeriodMs ?? options.quietPeriodMs;
        // A second, independent safety: the use the check saw, against the platform's record right now.
        const seen = (finding.evidence.key as PlatformKey | undefined)?.lastUse;
        const why =
          !key || key.status !== 'active'
            ? 'the key is no longer active'
            : seen && lastUseMoved(seen, key.lastUse)
              ? 'the key was used since the check saw it'
              : known
                ? 'the key is in our records now'
                : !key.name || !OUR_KEY_NAME.test(key.name)
                  ? 'the key is not named by our scheme'
                  : !key.lastUseKnown || !since || Date.now() - Date.parse(since) < quietPeriodMs
                    ? 'the key is not quiet'
                    : undefined;
        if (why) return { outcome: 'no_longer_safe', why };
        try {
          await platform.revokeTenantKey({ subaccountId: finding.subaccountId, keyId: finding.subject });
        } catch (error) {
          if (!(error instanceof PlatformNotFoundError)) throw error;
        }
        await withTransaction(pool, async (tx) => {
          const fixed = await markFindingFixed(tx, finding.id, 'revoke_orphan_key');
          if (fixed) {
            await emitFindingEvent(tx, fixed);
            await appendAudit(tx, {
              ...auditOrigin(),
              action: 'drift.fixed',
              externalRef: finding.externalRef,
              subject: finding.subject,
              details: {
                findingId: finding.id,
                kind: finding.kind,
                fix: 'revoke_orphan_key',
                name: key!.name,
                lastUsedAt: key!.lastUsedAt ?? null,
                quietPeriodMs,
              },
            });
          }
        });
        return { outcome: 'revoked' };
      },
    ),
  };
}
