import type { Client } from '@temporalio/client';
import { listRecentAuditForTenant } from '../../db/audit-store.js';
import type { Pool } from '../../db/pool.js';
import { listKeyRecords } from '../../db/tenant-keys-store.js';
import { findTenant, TenantNotFoundError } from '../../db/tenants-store.js';
import { listTransferIntents } from '../../db/transfer-intents-store.js';
import { getRotationSection, type RotationSection } from '../keys/rotation-status.js';
import { readLastRuns, type LastRun } from './last-runs.js';
import { onboardingStatusQuery, type OnboardingStatus } from '../../../workflows/onboard-tenant-messages.js';
import { closeStatusQuery, type CloseStatus } from '../../../workflows/close-tenant-messages.js';
import { transferNameOf } from '../../domain/onboarding.js';
import { queryOrNull } from '../query-run.js';
import { attentionOf, type AttentionItem } from './attention.js';
import { listFleetRuns, type FleetRunView } from './fleet-runs.js';
import { runReader, tenantPlanSection, type TenantPlanSection } from '../plans/tenant-plan.js';

/**
 * Everything an operator or a signup backend may know about a tenant, from our records and the
 * onboarding run. Contains no secret: keys appear as id + fingerprint only.
 */
export interface TenantStatusView {
  externalRef: string;
  record: {
    name: string;
    status: string;
    subaccountId: string | null;
    /** The plan version the tenant is on (null: none). */
    plan: { name: string; version: number } | null;
    createdAt: string;
    updatedAt: string;
  } | null;
  keys: Array<{
    slot: string;
    generation: number;
    keyId: string | null;
    status: string;
    fingerprint: string | null;
    verified: boolean;
  }>;
  transfers: Array<{
    purpose: string;
    amountMicroUsd: string;
    state: string;
    idempotencyKey: string;
    failureCode: string | null;
    resolution: string | null;
  }>;
  onboarding: { workflowId: string; runStatus: string; progress: OnboardingStatus | null } | null;
  recentAudit: Array<{ at: string; actor: string; action: string; subject: string | null }>;
  /** Recent key rotations; the live stage (e.g. held, and why) of an open one. */
  rotation: RotationSection;
  /**
   * Every run that concerns the tenant, the last of each kind (onboard or import, issue, rotate and revoke per
   * slot, suspend, resume, close, plan convergence, top-ups): status, outcome, failure, current wait, and the
   * run that started it (`partOf`).
   */
  lastRuns: LastRun[];
  /** A running close: its stage, and for a delayed close when the window ends (`closeAt`, `timeLeft`). */
  close: CloseStatus | null;
  /** Its plan version and latest convergence: from and to, outcome, and when held what holds it and the way out. */
  plan: TenantPlanSection;
  /** The fleet runs it is part of (a plan rollout, the fleet rotation, the auto top-up sweep), each with its wait. */
  fleetRuns: FleetRunView[];
  /** What waits for a person (src/domain/attention.ts): runs in such a wait, and a plan hold. Empty: nothing. */
  attention: AttentionItem[];
}

export async function getTenantStatus(
  deps: {
    pool: Pool;
    /** A client still connecting may be given: the first database read runs meanwhile (tenantctl status). */
    client?: Client | Promise<Client>;
  },
  externalRef: string,
): Promise<TenantStatusView> {
  // Runs first, records after: a run shown finished has already written what it changed, so one answer never shows
  // a completed resume beside a record that still says suspended. The runs together (the slots' beyond the default
  // slot's once the key records name them), then what a run's answer calls for (a running onboarding's progress, a
  // close's stage), the tenant's record and the runs it calls for (its plan's, its fleet runs), and the records last.
  const slots = deps.client
    ? listKeyRecords(deps.pool, externalRef).then((records) => records.map((k) => k.slot))
    : Promise.resolve([]);
  // Not left unhandled while the client connects (the runs' read awaits it, or a failure ends the answer first).
  slots.catch(() => undefined);
  const client = await deps.client;
  const { runs: lastRuns, absent } = client ? await readLastRuns(client, externalRef, slots) : { runs: [], absent: [] };
  const onboardRun = lastRuns.find((run) => run.kind === 'onboard');
  const [onboarding, close] = client
    ? await Promise.all([onboardRun ? onboardingOf(client, onboardRun) : null, closeRun(client, lastRuns)])
    : [null, null];
  const tenant = await findTenant(deps.pool, externalRef);
  if (!tenant && !onboarding) throw new TenantNotFoundError(externalRef);
  const planOn =
    tenant?.planName != null && tenant.planVersion !== null
      ? { name: tenant.planName, version: tenant.planVersion }
      : null;
  const facts = { externalRef, status: tenant?.status ?? 'creating', plan: planOn } as const;
  const [plan, fleetRuns] = client
    ? await Promise.all([
        tenantPlanSection(client, facts, runReader(client, lastRuns, absent)),
        listFleetRuns(client, facts, lastRuns),
      ])
    : [{ on: planOn, convergence: null }, []];
  const [keys, transfers, audit, rotation] = tenant
    ? await Promise.all([
        listKeyRecords(deps.pool, externalRef),
        listTransferIntents(deps.pool, externalRef),
        listRecentAuditForTenant(deps.pool, externalRef, 20),
        getRotationSection({ pool: deps.pool, ...(client ? { client } : {}) }, externalRef),
      ])
    : [[], [], [], { rotations: [] }];
  return {
    externalRef,
    record: tenant
      ? {
          name: tenant.name,
          status: tenant.status,
          subaccountId: tenant.subaccountId,
          plan: planOn,
          createdAt: tenant.createdAt.toISOString(),
          updatedAt: tenant.updatedAt.toISOString(),
        }
      : null,
    keys: keys.map((k) => ({
      slot: k.slot,
      generation: k.generation,
      keyId: k.platformKeyId,
      status: k.status,
      fingerprint: k.fingerprint,
      verified: k.verifiedAt !== null,
    })),
    transfers: transfers.map((t) => ({
      purpose: transferNameOf(t.purpose),
      amountMicroUsd: t.amountMicroUsd,
      state: t.state,
      idempotencyKey: t.idempotencyKey,
      failureCode: t.failureCode,
      resolution: t.resolution,
    })),
    onboarding,
    recentAudit: audit.map((a) => ({ at: a.at.toISOString(), actor: a.actor, action: a.action, subject: a.subject })),
    rotation,
    lastRuns,
    close,
    plan,
    fleetRuns,
    attention: attentionOf(lastRuns, plan, tenant ?? { externalRef, moneyHeldSince: null, moneyHoldReason: null }),
  };
}

async function closeRun(client: Client, lastRuns: readonly LastRun[]): Promise<CloseStatus | null> {
  const run = lastRuns.find((r) => r.kind === 'close');
  if (run?.status !== 'RUNNING') return null;
  const status = await queryOrNull(client.workflow.getHandle(run.workflowId), closeStatusQuery);
  return (
    status && {
      ...status,
      openTransfers: status.openTransfers.map((t) => ({ ...t, purpose: transferNameOf(t.purpose) })),
    }
  );
}

/** The onboarding as its last run (read with the others) shows it, with its progress while it runs. */
async function onboardingOf(client: Client, run: LastRun): Promise<TenantStatusView['onboarding']> {
  const progress =
    run.status === 'RUNNING'
      ? await queryOrNull(client.workflow.getHandle(run.workflowId), onboardingStatusQuery)
      : null;
  return { workflowId: run.workflowId, runStatus: run.status, progress };
}
