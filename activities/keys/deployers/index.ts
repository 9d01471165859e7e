import { Context } from '@temporalio/activity';
import { appendAudit } from '../../../src/db/audit-store.js';
import { findKeySecret } from '../../../src/db/key-secrets-store.js';
import { findKeyRecord } from '../../../src/db/tenant-keys-store.js';
import type { DeployerSpec } from '../../../src/domain/rotation-input.js';
import { DEFAULT_ROTATION_OPTIONS } from '../rotation-options.js';
import { tenantTokenAad } from '../../../src/secrets/vault.js';
import { auditOrigin, type ActivityDeps } from '../../context.js';
import { activityFailure, boundary } from '../../failures.js';
import { sendNotice, type NotifyEvent } from './notify.js';
import { writeKeyToProjectEnv } from './project-env.js';
import { FailureCode } from '../../../src/domain/failures.js';
import { defaultOutbound } from '../../outbound.js';

export interface DeployKeyInput {
  rotationId: string;
  externalRef: string;
  subaccountId: string;
  slot: string;
  /** The generation to make current: the new one, or the old one again after an abort. */
  generation: number;
  otherGeneration: number;
  event: NotifyEvent;
  deployer: DeployerSpec;
  emergency: boolean;
}

/** Never the token: where it went. */
export interface DeployKeyResult {
  deployer: DeployerSpec['kind'];
  targets: string[];
  deliveryId: string | null;
}

function cancellationSignal(): AbortSignal | undefined {
  try {
    return Context.current().cancellationSignal;
  } catch {
    return undefined;
  }
}

export function createDeployActivities(deps: ActivityDeps) {
  const { pool, platform, vault } = deps;
  const options = deps.rotation ?? DEFAULT_ROTATION_OPTIONS;
  const outbound = deps.outbound ?? defaultOutbound();

  async function keyOf(input: DeployKeyInput, generation: number) {
    const record = await findKeyRecord(pool, input.externalRef, input.slot, generation);
    if (!record?.platformKeyId || record.status !== 'active') {
      throw activityFailure(
        FailureCode.SECRET_MISSING,
        `key ${input.slot} generation ${generation} of ${input.externalRef} is not active`,
      );
    }
    return record as typeof record & { platformKeyId: string };
  }

  return {
    deployKeyGeneration: boundary(async (input: DeployKeyInput): Promise<DeployKeyResult> => {
      const current = await keyOf(input, input.generation);
      let result: DeployKeyResult;
      if (input.deployer.kind === 'notify') {
        const other = await findKeyRecord(pool, input.externalRef, input.slot, input.otherGeneration);
        const deliveryId = `tpo-rot-${input.rotationId}-${input.event}`;
        await sendNotice(
          options.notify,
          {
            event: input.event,
            deliveryId,
            rotationId: input.rotationId,
            externalRef: input.externalRef,
            subaccountId: input.subaccountId,
            slot: input.slot,
            generation: input.generation,
            keyId: current.platformKeyId,
            fingerprint: current.fingerprint ?? '',
            otherGeneration: input.otherGeneration,
            otherKeyId: other?.platformKeyId ?? null,
            emergency: input.emergency,
            occurredAt: (current.activatedAt ?? current.createdAt).toISOString(),
          },
          { outbound, logger: deps.logger, signal: cancellationSignal() },
        );
        result = { deployer: 'notify', targets: [options.notify!.url.replace(/\?.*$/, '')], deliveryId };
      } else {
        const secret = await findKeySecret(pool, current.id);
        if (!secret)
          throw activityFailure(
            FailureCode.SECRET_MISSING,
            `no stored secret for key ${input.slot} generation ${input.generation} of ${input.externalRef}`,
          );
        // The token is opened here and goes straight to the platform: it never returns to the workflow.
        const token = vault.open(
          secret.sealed,
          tenantTokenAad({ externalRef: input.externalRef, keyId: current.platformKeyId }),
        );
        const written = await writeKeyToProjectEnv(
          options.envVarsPlatform ?? platform,
          {
            subaccountId: input.subaccountId,
            variable: input.deployer.variable ?? options.envVariable,
            projectId: input.deployer.projectId,
          },
          token,
          cancellationSignal(),
        );
        result = { deployer: 'project-env', targets: [...written.projects, ...written.unchanged], deliveryId: null };
      }
      await appendAudit(pool, {
        ...auditOrigin(),
        action: input.event === 'keyRotated' ? 'rotation.deployed' : 'rotation.redeployed_previous',
        externalRef: input.externalRef,
        subject: current.platformKeyId,
        details: { slot: input.slot, generation: input.generation, fingerprint: current.fingerprint, ...result },
      });
      return result;
    }),
  };
}
