import { appendAudit } from '../../db/audit-store.js';
import {
  findPlanVersion,
  insertFirstPlanVersion,
  insertNextPlanVersion,
  listPlans as listPlanRows,
  PlanVersionTakenError,
  type PlanRow,
} from '../../db/plans-store.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import { DEFAULTS } from '../../config/defaults.js';
import {
  assertPlanWithinKeyLimit,
  createPlanInputSchema,
  planLookupSchema,
  updatePlanInputSchema,
} from '../../domain/plans.js';
import { parseInput } from '../../domain/tenant-input.js';
import { assertWithinTransferLimit } from '../../domain/transfer-limit.js';

/**
 * Plans for tenantctl and the gateway (issue 33): create (version 1), update (the next version, the whole
 * new body; optionally only if the latest is the one the caller read), show and list. Each input is checked
 * whole by one schema before anything is written; a version is written with its audit row in one
 * transaction, under the authenticated actor. Versions are never changed: the store has no UPDATE path and
 * the database refuses one.
 */
export interface PlanView {
  name: string;
  version: number;
  latestVersion: number;
  plan: Record<string, unknown>;
  createdAt: string;
  createdBy: string;
  reason: string | null;
}

export interface PlanSummary {
  name: string;
  latestVersion: number;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
}

/** No plan of this name (or no such version of it). */
export class PlanNotFoundError extends Error {
  override name = 'PlanNotFoundError';
  constructor(
    readonly planName: string,
    readonly version?: number,
  ) {
    super(version === undefined ? `no plan named ${planName}` : `no version ${version} of a plan named ${planName}`);
  }
}

/** A plan of this name exists already: `plans update` makes its next version. */
export class PlanExistsError extends Error {
  override name = 'PlanExistsError';
  constructor(readonly planName: string) {
    super(`a plan named ${planName} exists already (update it to make a new version)`);
  }
}

/** The latest version is not the one the update expected (or a concurrent write made it first). */
export class PlanVersionConflictError extends Error {
  override name = 'PlanVersionConflictError';
  constructor(
    readonly planName: string,
    readonly latestVersion: number | null,
    expected: number | null,
  ) {
    super(
      latestVersion === null || expected === null
        ? `another update of plan ${planName} was made at the same time; show it and try again`
        : `plan ${planName} is at version ${latestVersion}, not ${expected}: show it, then update from it`,
    );
  }
}

function viewOf(row: PlanRow): PlanView {
  return {
    name: row.name,
    version: row.version,
    latestVersion: row.latestVersion,
    plan: row.body,
    createdAt: row.createdAt.toISOString(),
    createdBy: row.createdBy,
    reason: row.reason,
  };
}

/** What a version holds and why: the audit row's details. */
function audited(row: PlanRow): Record<string, unknown> {
  return { name: row.name, version: row.version, reason: row.reason, plan: row.body };
}

/** The amounts a plan sends in one transfer: each within TRANSFER_MAX_MICRO_USD, as a top-up is. */
function assertAmountsWithinLimit(
  body: {
    initialFundingMicroUsd?: string | undefined;
    upgradeFundingMicroUsd?: string | undefined;
    autoTopUp?: { to: string } | undefined;
  },
  maxTransferMicroUsd: string | undefined,
): void {
  assertWithinTransferLimit(
    {
      initialFundingMicroUsd: body.initialFundingMicroUsd,
      upgradeFundingMicroUsd: body.upgradeFundingMicroUsd,
      'autoTopUp.to': body.autoTopUp?.to,
    },
    maxTransferMicroUsd,
  );
}

export interface PlanWriteOptions {
  /** The authenticated identity (recorded as created_by and the audit actor). */
  actor: string;
  /** TRANSFER_MAX_MICRO_USD (absent: its default). */
  maxTransferMicroUsd?: string | undefined;
  /** PLATFORM_TENANT_KEY_LIMIT (absent: its default): a plan's slots, with default, stay one below it. */
  tenantKeyLimit?: number | undefined;
}

export async function createPlan(pool: Pool, raw: unknown, options: PlanWriteOptions): Promise<PlanView> {
  const { name, reason, ...body } = parseInput(createPlanInputSchema, raw);
  assertAmountsWithinLimit(body, options.maxTransferMicroUsd);
  assertPlanWithinKeyLimit(body, options.tenantKeyLimit ?? DEFAULTS.PLATFORM_TENANT_KEY_LIMIT);
  return withTransaction(pool, async (tx) => {
    const row = await insertFirstPlanVersion(tx, { name, body, createdBy: options.actor, reason: reason ?? null });
    if (!row) throw new PlanExistsError(name);
    await appendAudit(tx, {
      actor: `operator:${options.actor}`,
      action: 'plan.created',
      subject: `plan:${name}`,
      details: audited(row),
    });
    return viewOf(row);
  });
}

export async function updatePlan(
  pool: Pool,
  rawName: unknown,
  raw: unknown,
  options: PlanWriteOptions,
): Promise<PlanView> {
  const { name } = parseInput(planLookupSchema, { name: rawName });
  const { expectVersion, reason, ...body } = parseInput(updatePlanInputSchema, raw);
  assertAmountsWithinLimit(body, options.maxTransferMicroUsd);
  assertPlanWithinKeyLimit(body, options.tenantKeyLimit ?? DEFAULTS.PLATFORM_TENANT_KEY_LIMIT);
  return withTransaction(pool, async (tx) => {
    const answer = await insertNextPlanVersion(tx, {
      name,
      body,
      createdBy: options.actor,
      reason: reason ?? null,
      expectVersion: expectVersion ?? null,
    }).catch((error: unknown) => {
      throw error instanceof PlanVersionTakenError ? new PlanVersionConflictError(name, null, null) : error;
    });
    if ('missing' in answer) throw new PlanNotFoundError(name);
    if ('stale' in answer) throw new PlanVersionConflictError(name, answer.stale, expectVersion ?? null);
    await appendAudit(tx, {
      actor: `operator:${options.actor}`,
      action: 'plan.updated',
      subject: `plan:${name}`,
      details: audited(answer.made),
    });
    return viewOf(answer.made);
  });
}

/** A plan's latest version, or `version` when given (a query parameter or flag: text or a number). */
export async function showPlan(pool: Pool, rawName: unknown, rawVersion?: unknown): Promise<PlanView> {
  const { name, version } = parseInput(planLookupSchema, {
    name: rawName,
    ...(rawVersion === undefined ? {} : { version: rawVersion }),
  });
  const row = await findPlanVersion(pool, name, version);
  if (!row) throw new PlanNotFoundError(name, version);
  return viewOf(row);
}

export async function listPlans(pool: Pool): Promise<PlanSummary[]> {
  return (await listPlanRows(pool)).map((row) => ({
    name: row.name,
    latestVersion: row.latestVersion,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    updatedBy: row.updatedBy,
  }));
}
