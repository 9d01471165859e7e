import { appendAudit } from '../../src/db/audit-store.js';
import {
  adoptRotation,
  findOpenRotation,
  insertRotation,
  listActiveTenantRefs,
  listOpenRotations,
  lockTenantForRotation,
  updateRotation,
  type KeyRotationRow,
  type RotationChange,
} from '../../src/db/key-rotations-store.js';
import { withTransaction } from '../../src/db/pool.js';
import { emitRotationEvent, lockRotationState } from './rotation-events.js';
import {
  findActiveKey,
  findKeyRecord,
  findMaxGeneration,
  markCreatingKeyFailed,
  markKeyRevoked,
} from '../../src/db/tenant-keys-store.js';
import { lastUseMoved, PlatformNotFoundError, type ApiKeyRecord, type LastUse } from '../../src/platform/index.js';
import type { DeployerSpec } from '../../src/domain/rotation-input.js';
import { DEFAULT_ROTATION_OPTIONS } from './rotation-options.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, boundary, assertTenantRule } from '../failures.js';
import { keyNamePrefix } from '../idempotency-keys.js';
import { createDeployActivities } from './deployers/index.js';
import { FailureCode } from '../../src/domain/failures.js';
import { endedRunStatus, ROTATION_END_STATE } from '../../src/infra/records-witness.js';
import { rotationRefusal } from '../../src/domain/tenant-rules.js';

export interface BeginRotationInput {
  externalRef: string;
  slot: string;
  emergency: boolean;
  deployer: DeployerSpec | undefined;
  workflowId: string;
  runId: string;
  reason: string | null;
}

export interface BeginRotationResult {
  rotationId: string;
  subaccountId: string;
  fromGeneration: number;
  toGeneration: number;
  oldKeyId: string;
  oldFingerprint: string | null;
  deployer: DeployerSpec;
  /** An open rotation of this slot left by an earlier run (e.g. terminated) was taken over. */
  adopted: boolean;
}

/** What the quiet gate sees of one key; never a secret. */
export interface KeyUsage {
  keyId: string;
  status: ApiKeyRecord['status'];
  lastUsedAt: string | null;
  lastUseKnown: boolean;
  /** The explicit reading (absent in histories recorded before it existed: then lastUseKnown decides). */
  lastUse?: LastUse;
  useCount?: number | null;
}

/** What the quiet gate saw of the old key when it passed: the revoke refuses if the platform now shows more use. */
export interface LastUseExpectation {
  lastUse: LastUse;
  useCount: number | null;
}

export interface KeyGenerationRef {
  rotationId: string;
  externalRef: string;
  subaccountId: string;
  slot: string;
  generation: number;
}

/** What a rotation's verify-and-look takes: the new key's record, and the keys the quiet gate's first look reads. */
export interface VerifyAndObserveInput {
  externalRef: string;
  slot: string;
  generation: number;
  subaccountId: string;
  keyIds: string[];
}

/**
 * A rotation's verify of its new key, then the quiet gate's first look, as one platform activity (issue 49: one
 * round trip through Temporal, not two). The look reads the new key's first use, which fixes deploy time on the
 * platform's clock, right after the proof made it, as when they were two steps. A retry proves the key again (as a
 * retried verify did), then looks: each is safe to repeat, and every request is paced as before. `verify` and
 * `observe` are the activities themselves, whose failures are already the activity boundary's.
 */
export function verifyThenObserve(
  verify: (input: { externalRef: string; slot: string; generation: number }) => Promise<{ verified: true }>,
  observe: (input: { subaccountId: string; keyIds: string[] }) => Promise<Record<string, KeyUsage | null>>,
) {
  return async (input: VerifyAndObserveInput): Promise<Record<string, KeyUsage | null>> => {
    await verify({ externalRef: input.externalRef, slot: input.slot, generation: input.generation });
    return observe({ subaccountId: input.subaccountId, keyIds: input.keyIds });
  };
}

export function createRotationActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  const options = deps.rotation ?? DEFAULT_ROTATION_OPTIONS;

  async function revokeOnPlatform(subaccountId: string, keyId: string): Promise<'revoked' | 'already_gone'> {
    try {
      await platform.revokeTenantKey({ subaccountId, keyId });
      return 'revoked';
    } catch (error) {
      // Revoking twice succeeds on the contract; a 404 means the key no longer exists for us.
      if (error instanceof PlatformNotFoundError) return 'already_gone';
      throw error;
    }
  }

  async function refuseIfUsedSince(subaccountId: string, keyId: string, expected: LastUseExpectation): Promise<void> {
    const { keys } = await platform.listTenantKeys({ subaccountId });
    const now = keys.find((k) => k.id === keyId);
    if (!now || now.status === 'revoked') return; // gone already: nothing in use to protect
    if (lastUseMoved(expected.lastUse, now.lastUse, expected.useCount ?? undefined, now.useCount)) {
      throw activityFailure(FailureCode.KEY_IN_USE, `key ${keyId} was used after the quiet gate passed: not revoked`, {
        details: {
          keyId,
          gateSaw: expected.lastUse,
          platformShows: now.lastUse,
          useCountBefore: expected.useCount,
          useCountNow: now.useCount ?? null,
        },
      });
    }
  }

  /** A rotation record left open whose run ended: written as its run ended (audited); false while the run runs. */
  async function recordEndIfRunEnded(rotation: KeyRotationRow): Promise<boolean> {
    const temporal = deps.drift?.temporal;
    if (!temporal) return false;
    const runStatus = await endedRunStatus(temporal, rotation.workflowId, rotation.runId);
    const becomes = runStatus ? ROTATION_END_STATE[runStatus] : undefined;
    if (!becomes) return false;
    const ended = await updateRotation(pool, rotation.id, {
      state: becomes,
      outcome: { recordedBy: 'the records lost its end: written as its run ended', runStatus },
    });
    if (ended)
      await appendAudit(pool, {
        ...auditOrigin(),
        action: 'rotation.end_recorded',
        externalRef: rotation.externalRef,
        subject: rotation.workflowId,
        details: { rotationId: rotation.id, runStatus, state: becomes },
      });
    return true;
  }

  return {
    ...createDeployActivities(deps),

    /**
     * Refuses what must not rotate (unknown ref, closing/closed or inactive tenant, no active key),
     * then records the rotation, or takes over the open one of the slot. The tenant row is read
     * under a share lock so a concurrent close either sees this rotation or is seen by it.
     */
    beginRotation: boundary(async (input: BeginRotationInput): Promise<BeginRotationResult> => {
      return withTransaction(pool, async (tx) => {
        const tenant = await lockTenantForRotation(tx, input.externalRef);
        // The starters refused it up front (src/domain/tenant-rules.ts); a close may have begun since, and runs
        // started elsewhere (Web UI, schedules, fleet) meet the rule here first.
        assertTenantRule(rotationRefusal, input.externalRef, tenant);
        const owner = { workflowId: input.workflowId, runId: input.runId, emergency: input.emergency };
        const open = await findOpenRotation(tx, input.externalRef, input.slot);
        const deployer =
          input.deployer ?? (open ? (JSON.parse(open.deployer) as DeployerSpec) : { kind: options.defaultDeployer });
        if (deployer.kind === 'notify' && !options.notify) {
          throw activityFailure(
            FailureCode.DEPLOYER_NOT_CONFIGURED,
            'the notify deployer needs ROTATION_NOTIFY_URL and ROTATION_NOTIFY_SECRET: nothing was created',
          );
        }
        let rotation;
        if (open) {
          rotation = await adoptRotation(tx, open.id, owner);
        } else {
          const current = await findActiveKey(tx, input.externalRef, input.slot);
          if (!current?.platformKeyId)
            throw activityFailure(
              FailureCode.NO_ACTIVE_KEY,
              `tenant ${input.externalRef} has no active key in slot ${input.slot} to rotate`,
            );
          const toGeneration = (await findMaxGeneration(tx, input.externalRef, input.slot)) + 1;
          rotation = await insertRotation(tx, {
            externalRef: input.externalRef,
            slot: input.slot,
            fromGeneration: current.generation,
            toGeneration,
            deployer: JSON.stringify(deployer),
            ...owner,
          });
        }
        const old = await findKeyRecord(tx, input.externalRef, input.slot, rotation.fromGeneration);
        await appendAudit(tx, {
          ...auditOrigin(),
          action: open ? 'rotation.adopted' : 'rotation.started',
          externalRef: input.externalRef,
          subject: rotation.id,
          details: {
            slot: input.slot,
            fromGeneration: rotation.fromGeneration,
            toGeneration: rotation.toGeneration,
            emergency: rotation.emergency,
            deployer: deployer.kind,
            reason: input.reason,
          },
        });
        return {
          rotationId: rotation.id,
          subaccountId: tenant.subaccountId,
          fromGeneration: rotation.fromGeneration,
          toGeneration: rotation.toGeneration,
          oldKeyId: old!.platformKeyId!,
          oldFingerprint: old!.fingerprint,
          deployer,
          adopted: Boolean(open),
        };
      });
    }),

    /** One read of the tenant's key records for the quiet gate. */
    observeKeyUsage: boundary(
      async (input: { subaccountId: string; keyIds: string[] }): Promise<Record<string, KeyUsage | null>> => {
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        const byId = new Map(keys.map((k) => [k.id, k]));
        return Object.fromEntries(
          input.keyIds.map((id) => {
            const key = byId.get(id);
            return [
              id,
              key
                ? {
                    keyId: id,
                    status: key.status,
                    lastUsedAt: key.lastUsedAt ?? null,
                    lastUseKnown: key.lastUseKnown,
                    lastUse: key.lastUse,
                    useCount: key.useCount ?? null,
                  }
                : null,
            ];
          }),
        );
      },
    ),

    /**
     * Revokes the old generation once the gate has passed (or an operator said so). Idempotent.
     * With `expect` (the gate's observation), a second, independent safety: the key record is read
     * again right before the revoke, and any use since the gate passed refuses it (KEY_IN_USE,
     * non-retryable; the workflow goes back to the gate). An operator's decision passes no `expect`.
     */
    revokeKeyGeneration: boundary(
      async (
        input: KeyGenerationRef & { why: string; expect?: LastUseExpectation | null },
      ): Promise<{ keyId: string; result: 'revoked' | 'already_gone' }> => {
        const record = await findKeyRecord(pool, input.externalRef, input.slot, input.generation);
        if (!record?.platformKeyId)
          throw activityFailure(
            FailureCode.NO_ACTIVE_KEY,
            `no key ${input.slot} generation ${input.generation} of ${input.externalRef}`,
          );
        if (input.expect && record.status !== 'revoked')
          await refuseIfUsedSince(input.subaccountId, record.platformKeyId, input.expect);
        const result =
          record.status === 'revoked'
            ? 'already_gone'
            : await revokeOnPlatform(input.subaccountId, record.platformKeyId);
        await withTransaction(pool, async (tx) => {
          const updated = await markKeyRevoked(tx, record.id);
          if (updated && record.status !== 'revoked') {
            await appendAudit(tx, {
              ...auditOrigin(),
              action: 'key.revoked',
              externalRef: input.externalRef,
              subject: record.platformKeyId,
              details: { slot: input.slot, generation: input.generation, rotationId: input.rotationId, why: input.why },
            });
          }
        });
        return { keyId: record.platformKeyId, result };
      },
    ),

    /**
     * Undoes the new generation (abort, cancel, failure before the old key was revoked): revokes
     * every platform key named for it — the issued one and any orphan of a lost create — so no
     * extra active key is left. Refuses once the old key is revoked: the new one is then the only key.
     */
    revokeNewGeneration: boundary(
      async (
        input: KeyGenerationRef & { oldGeneration: number; why: string },
      ): Promise<{ revoked: string[]; refused: boolean }> => {
        const old = await findKeyRecord(pool, input.externalRef, input.slot, input.oldGeneration);
        if (old?.status !== 'active') return { revoked: [], refused: true };
        // The record first (issue 44): a create of this generation still running beside us is then refused its
        // store by the fence and revokes its own key, so none lands active after the list below.
        const record = await findKeyRecord(pool, input.externalRef, input.slot, input.generation);
        if (record?.status === 'creating') await markCreatingKeyFailed(pool, record.id);
        const prefix = `${keyNamePrefix(input.slot, input.generation)}-a`;
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        const ours = keys.filter((k) => k.name?.startsWith(prefix) && k.status !== 'revoked');
        for (const key of ours) await revokeOnPlatform(input.subaccountId, key.id);
        const now = await findKeyRecord(pool, input.externalRef, input.slot, input.generation);
        await withTransaction(pool, async (tx) => {
          if (now && now.status !== 'failed') await markKeyRevoked(tx, now.id);
          await appendAudit(tx, {
            ...auditOrigin(),
            action: 'rotation.new_key_revoked',
            externalRef: input.externalRef,
            subject: input.rotationId,
            details: { slot: input.slot, generation: input.generation, keyIds: ours.map((k) => k.id), why: input.why },
          });
        });
        return { revoked: ours.map((k) => k.id), refused: false };
      },
    ),

    /** Progress and the final state, in the records (`tenantctl status`, a closing tenant) and the audit log. */
    recordRotation: boundary(
      async (input: {
        rotationId: string;
        externalRef: string;
        change: RotationChange;
        audit?: string;
        operator?: string;
      }): Promise<void> => {
        // A change that moves no state and writes no audit row (a stage, the deploy's time) has no event to emit:
        // its one UPDATE is the whole step (issue 49: three statements fewer than the transaction).
        if (input.change.state === undefined && !input.audit) {
          await updateRotation(pool, input.rotationId, input.change);
          return;
        }
        await withTransaction(pool, async (tx) => {
          const before = await lockRotationState(tx, input.rotationId);
          const row = await updateRotation(tx, input.rotationId, input.change);
          if (row && row.state !== before) await emitRotationEvent(tx, row);
          if (row && input.audit) {
            const origin = auditOrigin();
            await appendAudit(tx, {
              ...origin,
              actor: input.operator ? `operator:${input.operator}` : origin.actor,
              action: input.audit,
              externalRef: input.externalRef,
              subject: input.rotationId,
              details: { slot: row.slot, toGeneration: row.toGeneration, ...(input.change.outcome ?? {}) },
            });
          }
        });
      },
    ),

    /**
     * The tenant's rotations our records hold open (a close waits for them). One whose run Temporal shows ended is
     * recorded as it ended instead: the records lost its end (a restore from a backup taken while it ran; the run
     * writes its record before it ends), and no run will write it again. Drift records it too, but skips a tenant
     * whose close runs: the close would wait for it until its deadline (the restore drill met it).
     */
    listOpenRotationsOfTenant: boundary(
      async (input: {
        externalRef: string;
      }): Promise<Array<{ rotationId: string; slot: string; state: string; workflowId: string }>> => {
        const open = [];
        for (const r of await listOpenRotations(pool, input.externalRef))
          if (!(await recordEndIfRunEnded(r))) open.push(r);
        return open.map((r) => ({ rotationId: r.id, slot: r.slot, state: r.state, workflowId: r.workflowId }));
      },
    ),

    listActiveTenantsPage: boundary(async (input: { after: string | null; limit: number }): Promise<string[]> =>
      listActiveTenantRefs(pool, input),
    ),
  };
}
