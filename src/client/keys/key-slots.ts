import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Pool } from '../../db/pool.js';
import { findActiveKey, listKeyRecords } from '../../db/tenant-keys-store.js';
import { NoActiveKeyError } from './reveal-key.js';
import { describeRun, type RunView } from '../run-status.js';
import { currentWaitOf, type WaitView } from '../current-wait.js';
import { getTenant } from '../../db/tenants-store.js';
import { keyIssueWorkflowId, keyRevokeWorkflowId } from '../../domain/ids.js';
import {
  issueTenantKeyInputSchema,
  revokeTenantKeyInputSchema,
  type IssueTenantKeyInput,
  type RevokeTenantKeyInput,
} from '../../domain/key-slot-input.js';
import { tenantExternalRefKey } from '../../domain/search-attributes.js';
import { parseCallerInput } from '../../domain/tenant-input.js';
import { assertTenantAllows, keyIssueRefusal } from '../../domain/tenant-rules.js';
import type { issueTenantKey, IssueTenantKeyResult } from '../../../workflows/keys/issue-tenant-key.js';
import type { revokeTenantKeySlot, RevokeTenantKeySlotResult } from '../../../workflows/keys/revoke-tenant-key.js';

/**
 * Keys per workload and environment, for the signup backend (TypeScript), the gateway's /v1 routes and tenantctl:
 * issue a slot's key, revoke it through the quiet gate, list a tenant's slots. Input is checked and the tenant
 * looked up before anything starts: a bad slot, an unknown tenant or one that may not be issued a key
 * (keyIssueRefusal) starts no run.
 */
export type KeyIssueHandle = WorkflowHandle<typeof issueTenantKey> & { started: boolean };
export type KeyRevokeHandle = WorkflowHandle<typeof revokeTenantKeySlot> & { started: boolean };

async function startOrJoin<W extends typeof issueTenantKey | typeof revokeTenantKeySlot>(
  client: Client,
  type: string,
  workflowId: string,
  input: unknown,
  externalRef: string,
  taskQueue: string,
): Promise<WorkflowHandle<W> & { started: boolean }> {
  try {
    const handle = await client.workflow.start<W>(type, {
      taskQueue,
      workflowId,
      args: [input] as Parameters<W>,
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: externalRef }]),
    });
    return Object.assign(handle, { started: true });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  return Object.assign(client.workflow.getHandle<W>(workflowId), { started: false });
}

/** Issues the slot's key (a second call while one runs joins it; for a slot with a key, returns that key). */
export async function startKeyIssue(
  deps: { client: Client; pool: Pool },
  rawInput: IssueTenantKeyInput | unknown,
  options: { taskQueue: string },
): Promise<KeyIssueHandle> {
  const input = parseCallerInput(issueTenantKeyInputSchema, rawInput);
  assertTenantAllows(keyIssueRefusal, await getTenant(deps.pool, input.externalRef));
  return startOrJoin<typeof issueTenantKey>(
    deps.client,
    'issueTenantKey',
    keyIssueWorkflowId(input.externalRef, input.slot),
    input,
    input.externalRef,
    options.taskQueue,
  );
}

/** Revokes the slot's key once the platform shows it quiet, or at once with `force` (operator and reason). */
export async function startKeyRevoke(
  deps: { client: Client; pool: Pool },
  rawInput: RevokeTenantKeyInput | unknown,
  options: { taskQueue: string },
): Promise<KeyRevokeHandle> {
  const input = parseCallerInput(revokeTenantKeyInputSchema, rawInput);
  await getTenant(deps.pool, input.externalRef);
  // A slot with no active key starts no run (it could only fail).
  if (!(await findActiveKey(deps.pool, input.externalRef, input.slot)))
    throw new NoActiveKeyError(`tenant ${input.externalRef} has no active key in slot ${input.slot}`);
  return startOrJoin<typeof revokeTenantKeySlot>(
    deps.client,
    'revokeTenantKeySlot',
    keyRevokeWorkflowId(input.externalRef, input.slot),
    input,
    input.externalRef,
    options.taskQueue,
  );
}

/** A slot's issue or revoke run that is waiting: which run, and its wait (stage, what for, since, decisions). */
export interface SlotKeyWait extends WaitView {
  action: 'issue' | 'revoke';
  workflowId: string;
}

export interface SlotKeyView {
  slot: string;
  generation: number;
  status: string;
  keyId: string | null;
  fingerprint: string | null;
  verified: boolean;
  createdAt: string;
  revokedAt: string | null;
  /**
   * The slot's running issue (on the generation being created) or revoke (on the active key) when it
   * waits, e.g. at the platform's active-key limit or for the key to go quiet; else null.
   */
  waiting: SlotKeyWait | null;
}

/**
 * A tenant's keys by slot and generation (never a secret). With `client`, each slot's issue and revoke
 * runs are read too, and a run that waits is shown on the row it is about.
 */
export async function listSlotKeys(pool: Pool, externalRef: string, client?: Client): Promise<SlotKeyView[]> {
  await getTenant(pool, externalRef);
  const rows = await listKeyRecords(pool, externalRef);
  const keys: SlotKeyView[] = rows.map((r) => ({
    slot: r.slot,
    generation: r.generation,
    status: r.status,
    keyId: r.platformKeyId,
    fingerprint: r.fingerprint,
    verified: r.verifiedAt !== null,
    createdAt: r.createdAt.toISOString(),
    revokedAt: r.revokedAt?.toISOString() ?? null,
    waiting: null,
  }));
  if (!client) return keys;
  const slots = [...new Set(keys.map((k) => k.slot))];
  const waits = await Promise.all(
    slots.flatMap((slot) =>
      (['issue', 'revoke'] as const).map(async (action) => ({
        slot,
        wait: await slotWaitOf(client, externalRef, slot, action),
      })),
    ),
  );
  for (const { slot, wait } of waits) {
    if (!wait) continue;
    // An issue waits on the generation it is creating, a revoke on the active key; the slot's newest row otherwise.
    const ofSlot = keys.filter((k) => k.slot === slot);
    const row =
      ofSlot.filter((k) => k.status === (wait.action === 'issue' ? 'creating' : 'active')).at(-1) ?? ofSlot.at(-1);
    if (row && !row.waiting) row.waiting = wait;
  }
  return keys;
}

async function slotWaitOf(
  client: Client,
  externalRef: string,
  slot: string,
  action: 'issue' | 'revoke',
): Promise<SlotKeyWait | null> {
  const workflowId =
    action === 'issue' ? keyIssueWorkflowId(externalRef, slot) : keyRevokeWorkflowId(externalRef, slot);
  const handle = client.workflow.getHandle(workflowId);
  const description = await handle.describe().catch((error: unknown) => {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  });
  if (description?.status.name !== 'RUNNING') return null;
  const wait = await currentWaitOf(handle);
  return wait ? { action, workflowId, ...wait } : null;
}

/** Where a slot's latest issue or revoke run stands (null: none yet): what `key issue|revoke --wait` polls. */
export function describeKeyRun(
  client: Client,
  externalRef: string,
  slot: string,
  action: 'issue' | 'revoke',
): Promise<RunView<IssueTenantKeyResult | RevokeTenantKeySlotResult> | null> {
  const workflowId =
    action === 'issue' ? keyIssueWorkflowId(externalRef, slot) : keyRevokeWorkflowId(externalRef, slot);
  return describeRun(client, workflowId);
}
