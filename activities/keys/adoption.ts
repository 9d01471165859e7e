import { appendAudit } from '../../src/db/audit-store.js';
import {
  findKeyByPlatformId,
  listAdoptableTenantRefs,
  listUnmanagedKeys,
  openAdoptionRow,
} from '../../src/db/adoptions-store.js';
import { adoptRotation, findOpenRotation, lockTenantForRotation } from '../../src/db/key-rotations-store.js';
import { withTransaction } from '../../src/db/pool.js';
import { findActiveKey, findMaxGeneration, markKeyRevoked } from '../../src/db/tenant-keys-store.js';
import { FailureCode } from '../../src/domain/failures.js';
import type { DeployerSpec } from '../../src/domain/rotation-input.js';
import { lastUseMoved, PlatformNotFoundError } from '../../src/platform/index.js';
import { auditOrigin, type ActivityDeps } from '../context.js';
import { activityFailure, boundary, assertTenantRule } from '../failures.js';
import type { LastUseExpectation } from './rotation.js';
import { DEFAULT_ROTATION_OPTIONS } from './rotation-options.js';
import { rotationRefusal } from '../../src/domain/tenant-rules.js';

/**
 * The adoption rotation's own steps (`tenantctl rotate-key R --adopt`). Issuing, deploying and
 * verifying the managed key, and reading key use for the quiet gate, are rotation's activities.
 */
export interface BeginAdoptionResult {
  rotationId: string;
  subaccountId: string;
  fromGeneration: number;
  toGeneration: number;
  /** False: the slot already has its managed key (an earlier adoption was aborted): not issued again. */
  issue: boolean;
  /** The slot's managed key when it already exists (not issued again). */
  managedKey: { keyId: string; fingerprint: string } | null;
  unmanaged: Array<{ keyId: string; generation: number }>;
  deployer: DeployerSpec;
  takenOver: boolean;
}

export function createAdoptionActivities(deps: ActivityDeps) {
  const { pool, platform } = deps;
  const options = deps.rotation ?? DEFAULT_ROTATION_OPTIONS;

  return {
    listAdoptableTenantsPage: boundary(
      async (input: { slot: string; after: string | null; limit: number }): Promise<string[]> =>
        listAdoptableTenantRefs(pool, input),
    ),

    /** Refuses what must not be adopted, then records the adoption (or takes over its open row). */
    beginAdoption: boundary(
      async (input: {
        externalRef: string;
        slot: string;
        deployer: DeployerSpec | undefined;
        workflowId: string;
        runId: string;
        reason: string | null;
      }): Promise<BeginAdoptionResult> =>
        withTransaction(pool, async (tx) => {
          const tenant = await lockTenantForRotation(tx, input.externalRef);
          assertTenantRule(rotationRefusal, input.externalRef, tenant);
          const open = await findOpenRotation(tx, input.externalRef, input.slot);
          if (open && open.outcome.adoption !== true)
            throw activityFailure(
              FailureCode.ROTATION_STILL_OPEN,
              `an ordinary rotation of slot ${input.slot} is open (generation ` +
                `${open.fromGeneration} → ${open.toGeneration}): let it finish first`,
            );
          const deployer =
            input.deployer ?? (open ? (JSON.parse(open.deployer) as DeployerSpec) : { kind: options.defaultDeployer });
          if (deployer.kind === 'notify' && !options.notify)
            throw activityFailure(
              FailureCode.DEPLOYER_NOT_CONFIGURED,
              'the notify deployer needs ROTATION_NOTIFY_URL and ROTATION_NOTIFY_SECRET: nothing was created',
            );
          const unmanaged = await listUnmanagedKeys(tx, input.externalRef, input.slot);
          const managed = await findActiveKey(tx, input.externalRef, input.slot);
          let row;
          if (open) row = await adoptRotation(tx, open.id, { ...input, emergency: false });
          else {
            if (!unmanaged.length)
              throw activityFailure(
                FailureCode.NO_UNMANAGED_KEY,
                `tenant ${input.externalRef} has no unmanaged key in slot ${input.slot}: nothing ` +
                  `to adopt (rotate it without --adopt)`,
              );
            row = await openAdoptionRow(tx, {
              externalRef: input.externalRef,
              slot: input.slot,
              fromGeneration: unmanaged[0]!.generation,
              toGeneration: managed
                ? managed.generation
                : (await findMaxGeneration(tx, input.externalRef, input.slot)) + 1,
              deployer: JSON.stringify(deployer),
              workflowId: input.workflowId,
              runId: input.runId,
            });
          }
          await appendAudit(tx, {
            ...auditOrigin(),
            action: open ? 'rotation.adopted' : 'rotation.adoption_started',
            externalRef: input.externalRef,
            subject: row.id,
            details: {
              slot: input.slot,
              toGeneration: row.toGeneration,
              unmanagedKeys: unmanaged.map((k) => k.keyId),
              deployer: deployer.kind,
              reason: input.reason,
            },
          });
          return {
            rotationId: row.id,
            subaccountId: tenant.subaccountId,
            fromGeneration: row.fromGeneration,
            toGeneration: row.toGeneration,
            issue: managed?.generation !== row.toGeneration,
            managedKey:
              managed?.generation === row.toGeneration && managed.platformKeyId
                ? { keyId: managed.platformKeyId, fingerprint: managed.fingerprint ?? '' }
                : null,
            unmanaged,
            deployer,
            takenOver: Boolean(open),
          };
        }),
    ),

    /**
     * Revokes one unmanaged key once its quiet gate passed (or an operator said so). With `expect`, the
     * key is read again first and any use since the gate passed refuses the revoke (KEY_IN_USE).
     */
    revokeUnmanagedKey: boundary(
      async (input: {
        rotationId: string;
        externalRef: string;
        subaccountId: string;
        keyId: string;
        why: string;
        operator?: string;
        expect?: LastUseExpectation | null;
      }): Promise<{ result: 'revoked' | 'already_gone' }> => {
        const record = await findKeyByPlatformId(pool, input.externalRef, input.keyId);
        if (!record || (record.status !== 'unmanaged' && record.status !== 'revoked'))
          throw activityFailure(
            FailureCode.KEY_RECORD_STATE,
            `key ${input.keyId} of ${input.externalRef} is not an unmanaged key (${record?.status ?? 'no record'})`,
          );
        if (record.status === 'revoked') return { result: 'already_gone' };
        const { keys } = await platform.listTenantKeys({ subaccountId: input.subaccountId });
        const now = keys.find((k) => k.id === input.keyId);
        if (input.expect && now && now.status !== 'revoked') {
          if (lastUseMoved(input.expect.lastUse, now.lastUse, input.expect.useCount ?? undefined, now.useCount))
            throw activityFailure(FailureCode.KEY_IN_USE, `key ${input.keyId} was used after the quiet gate passed`);
        }
        let result: 'revoked' | 'already_gone' = 'already_gone';
        if (now && now.status !== 'revoked') {
          try {
            await platform.revokeTenantKey({ subaccountId: input.subaccountId, keyId: input.keyId });
            result = 'revoked';
          } catch (error) {
            if (!(error instanceof PlatformNotFoundError)) throw error;
          }
        }
        await withTransaction(pool, async (tx) => {
          if (!(await markKeyRevoked(tx, record.id))) return;
          const origin = auditOrigin();
          await appendAudit(tx, {
            ...origin,
            actor: input.operator ? `operator:${input.operator}` : origin.actor,
            action: 'key.revoked',
            externalRef: input.externalRef,
            subject: input.keyId,
            details: {
              slot: record.slot,
              generation: record.generation,
              rotationId: input.rotationId,
              unmanaged: true,
              why: input.why,
              platform: result,
            },
          });
        });
        return { result };
      },
    ),
  };
}
