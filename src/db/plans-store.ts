import { PLAN_SPEC_RULE, planSpecOf } from '../domain/plan-ref.js';
import { DEFAULTS } from '../config/defaults.js';
import { planBodySchema, planKeySlotsProblem, type ResolvedPlan } from '../domain/plans.js';
import { InvalidInputError, parseInput } from '../domain/tenant-input.js';
import { transferLimitProblems } from '../domain/transfer-limit.js';
import type { Queryable } from './pool.js';

/**
 * Plan versions (`plans`): one row per (name, version), never changed (the database refuses UPDATE and
 * DELETE). A new plan is version 1; an update is the latest version + 1, written by one statement that
 * reads the latest and inserts after it, so two updates at once cannot both make the same version (the
 * primary key refuses the second: `PlanVersionTakenError`).
 */
export interface PlanRow {
  name: string;
  version: number;
  body: Record<string, unknown>;
  createdAt: Date;
  createdBy: string;
  reason: string | null;
  /** The plan's latest version (the row's own when it is the latest). */
  latestVersion: number;
}

export interface PlanSummaryRow {
  name: string;
  latestVersion: number;
  /** When version 1 was made. */
  createdAt: Date;
  /** When the latest version was made, and by whom. */
  updatedAt: Date;
  updatedBy: string;
}

/** Another write made this version first (a concurrent create or update). */
export class PlanVersionTakenError extends Error {
  override name = 'PlanVersionTakenError';
  constructor(
    readonly planName: string,
    options?: { cause: unknown },
  ) {
    super(`another write made a version of plan ${planName} at the same time`, options);
  }
}

const COLUMNS = `name, version, body, created_at AS "createdAt", created_by AS "createdBy", reason`;

function uniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === '23505';
}

/** Version 1 of a new plan; undefined when a plan of that name exists. */
export async function insertFirstPlanVersion(
  db: Queryable,
  plan: { name: string; body: Record<string, unknown>; createdBy: string; reason: string | null },
): Promise<PlanRow | undefined> {
  const { rows } = await db.query<PlanRow>(
    `INSERT INTO plans (name, version, body, created_by, reason)
     SELECT $1::text, 1, $2::jsonb, $3::text, $4::text
      WHERE NOT EXISTS (SELECT 1 FROM plans WHERE name = $1::text)
     ON CONFLICT (name, version) DO NOTHING
     RETURNING ${COLUMNS}, version AS "latestVersion"`,
    [plan.name, JSON.stringify(plan.body), plan.createdBy, plan.reason],
  );
  return rows[0];
}

/**
 * The next version of an existing plan. Answers `missing` (no such plan), `stale` (the latest is not
 * `expectVersion`, with what it is) or the new row. Throws PlanVersionTakenError when a concurrent
 * update made the same version first.
 */
export async function insertNextPlanVersion(
  db: Queryable,
  plan: {
    name: string;
    body: Record<string, unknown>;
    createdBy: string;
    reason: string | null;
    expectVersion: number | null;
  },
): Promise<{ made: PlanRow } | { missing: true } | { stale: number }> {
  try {
    const { rows } = await db.query<PlanRow & { made: boolean }>(
      `WITH latest AS (SELECT max(version) AS version FROM plans WHERE name = $1::text),
       made AS (
         INSERT INTO plans (name, version, body, created_by, reason)
         SELECT $1::text, latest.version + 1, $2::jsonb, $3::text, $4::text FROM latest
          WHERE latest.version IS NOT NULL AND ($5::int IS NULL OR latest.version = $5::int)
         RETURNING ${COLUMNS}, version AS "latestVersion"
       )
       SELECT made.*, true AS made FROM made
       UNION ALL
       SELECT NULL, NULL, NULL, NULL, NULL, NULL, latest.version, false FROM latest
        WHERE NOT EXISTS (SELECT 1 FROM made)`,
      [plan.name, JSON.stringify(plan.body), plan.createdBy, plan.reason, plan.expectVersion],
    );
    const row = rows[0]!;
    if (row.made) {
      const { made: _made, ...made } = row;
      return { made };
    }
    return row.latestVersion === null ? { missing: true } : { stale: row.latestVersion };
  } catch (error) {
    if (uniqueViolation(error)) throw new PlanVersionTakenError(plan.name, { cause: error });
    throw error;
  }
}

/** A version of a plan (absent: its latest), with the plan's latest version number. */
export async function findPlanVersion(db: Queryable, name: string, version?: number): Promise<PlanRow | undefined> {
  const { rows } = await db.query<PlanRow>(
    `WITH latest AS (SELECT max(version) AS latest_version FROM plans WHERE name = $1::text)
     SELECT ${COLUMNS}, latest_version AS "latestVersion" FROM plans, latest
      WHERE name = $1::text AND version = coalesce($2::int, latest_version)`,
    [name, version ?? null],
  );
  return rows[0];
}

/** Every plan by name: its latest version, when it was made and when and by whom it was last changed. */
export async function listPlans(db: Queryable): Promise<PlanSummaryRow[]> {
  const { rows } = await db.query<PlanSummaryRow>(
    `SELECT DISTINCT ON (name) name, version AS "latestVersion",
            min(created_at) OVER (PARTITION BY name) AS "createdAt",
            created_at AS "updatedAt", created_by AS "updatedBy"
       FROM plans ORDER BY name, version DESC`,
  );
  return rows;
}

/**
 * The version a `plan` names (`starter`: the latest now; `starter@2`: that one), or InvalidInputError naming
 * `plan` when there is none, its initial funding is above TRANSFER_MAX_MICRO_USD or its slots do not fit
 * PLATFORM_TENANT_KEY_LIMIT (a version made under a higher limit). One rule for every way in: the client
 * starter (before a run starts) and the onboarding's first step (a run started elsewhere).
 */
export type { ResolvedPlan };

/** The limits a plan is carried out under (absent: their defaults). */
export interface PlanLimits {
  /** TRANSFER_MAX_MICRO_USD. */
  maxTransferMicroUsd?: string | undefined;
  /** PLATFORM_TENANT_KEY_LIMIT. */
  tenantKeyLimit?: number | undefined;
}

export async function resolvePlan(db: Queryable, spec: string, limits: PlanLimits = {}): Promise<ResolvedPlan> {
  const lookup = planSpecOf(spec);
  if (!lookup) throw new InvalidInputError([`plan: must be ${PLAN_SPEC_RULE}`]);
  const target = await findPlanTarget(db, lookup.name, lookup.version, limits.tenantKeyLimit);
  if (!target)
    throw new InvalidInputError([
      lookup.version === undefined
        ? `plan: no plan named ${lookup.name} (tenantctl plans list shows them)`
        : `plan: plan ${lookup.name} has no version ${lookup.version} (tenantctl plans show ${lookup.name})`,
    ]);
  const { problem, ...plan } = target;
  const over = transferLimitProblems({ plan: plan.body.initialFundingMicroUsd }, limits.maxTransferMicroUsd);
  if (over.length) throw new InvalidInputError([`${over[0]!} (the plan's initialFundingMicroUsd)`]);
  if (problem) throw new InvalidInputError([problem]);
  return plan;
}

/** A version tenants are brought onto, and the rule it breaks there (`plan: …`), else null. */
export interface PlanTarget extends ResolvedPlan {
  problem: string | null;
}

/**
 * A version (absent: the latest) as every way of carrying one out reads it: onboarding by plan, a rollout's start
 * and its dry run, an assignment, and the input check of a run started elsewhere (activities/input-policy.ts).
 * Its slots must leave a key free under PLATFORM_TENANT_KEY_LIMIT (`tenantKeyLimit`, absent: its default): a
 * version made under a higher limit would hold every tenant it reaches at the platform's key cap. One function, so
 * no way in can skip the rule. undefined: no such version.
 */
export async function findPlanTarget(
  db: Queryable,
  name: string,
  version: number | undefined,
  tenantKeyLimit: number | undefined,
): Promise<PlanTarget | undefined> {
  const row = await findPlanVersion(db, name, version);
  if (!row) return undefined;
  const ref = { name: row.name, version: row.version };
  const body = parseInput(planBodySchema, row.body);
  const problem = planKeySlotsProblem(body, tenantKeyLimit ?? DEFAULTS.PLATFORM_TENANT_KEY_LIMIT, ref);
  return { ...ref, body, problem };
}

/** The plan version a tenant's record says it is on; null: on none (undefined: no such tenant). */
export async function findTenantPlanRef(
  db: Queryable,
  externalRef: string,
): Promise<{ name: string; version: number } | null | undefined> {
  const { rows } = await db.query<{ name: string | null; version: number | null }>(
    `SELECT plan_name AS name, plan_version AS version FROM tenants WHERE external_ref = $1::text`,
    [externalRef],
  );
  const row = rows[0];
  if (!row) return undefined;
  return row.name === null || row.version === null ? null : { name: row.name, version: row.version };
}
