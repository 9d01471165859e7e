import { FailureCode } from './failures.js';

/**
 * A tenant's status in our records, and the one home of what each status allows: may this tenant's keys be
 * rotated (or adopted), may it be issued a key, may it take a transfer or a funding policy. The client starters
 * check these before anything starts (the gateway and tenantctl go through them); the activities check the same
 * function again for runs started elsewhere (a schedule, the Web UI, a fleet run) and for a close that began
 * after the start. Pure: workflows may import it.
 */
export const TenantStatus = {
  creating: 'creating',
  created: 'created',
  active: 'active',
  cancelled: 'cancelled',
  failed: 'failed',
  suspended: 'suspended',
  closing: 'closing',
  closed: 'closed',
} as const;
export type TenantStatus = (typeof TenantStatus)[keyof typeof TenantStatus];

/** Tenants in these states take no new work: no onboarding step, no rotation, no new key, no transfer. */
export const CLOSING_STATES: readonly TenantStatus[] = [TenantStatus.closing, TenantStatus.closed];

export function isClosing(status: string): boolean {
  return (CLOSING_STATES as readonly string[]).includes(status);
}

/** What a rule reads of the tenant's record. */
export interface TenantFacts {
  externalRef: string;
  status: string;
  subaccountId: string | null;
  /** Since when new money waits for a drift check after a restore of the records (absent or null: not held). */
  moneyHeldSince?: Date | null;
  /** Why it is held: what found the records gone back in time. */
  moneyHoldReason?: string | null;
}

export type TenantRefusalCode =
  | typeof FailureCode.TENANT_CLOSED
  | typeof FailureCode.TENANT_NOT_ACTIVE
  | typeof FailureCode.TENANT_NOT_PROVISIONED
  | typeof FailureCode.CLOSE_SCHEDULED
  | typeof FailureCode.BALANCE_BELOW_FLOOR
  | typeof FailureCode.RECORDS_RESTORED;

/** Why a tenant is refused: the failure code, the rule it breaks, and a message naming the tenant and its status. */
export interface TenantRefusal {
  code: TenantRefusalCode;
  rule: string;
  message: string;
}

export type TenantRule = (tenant: TenantFacts) => TenantRefusal | undefined;

function refusal(tenant: TenantFacts, code: TenantRefusalCode, rule: string): TenantRefusal {
  return { code, rule, message: `tenant ${tenant.externalRef} is ${tenant.status}: ${rule}` };
}

const closedRefusal = (tenant: TenantFacts, rule: string): TenantRefusal | undefined =>
  isClosing(tenant.status) ? refusal(tenant, FailureCode.TENANT_CLOSED, rule) : undefined;

/** A rotation or an adoption of a slot, now: an active tenant with a sub-account; a closing one never. */
export const rotationRefusal: TenantRule = (tenant) =>
  closedRefusal(tenant, 'its keys are not rotated') ??
  (tenant.status === TenantStatus.active && tenant.subaccountId
    ? undefined
    : refusal(tenant, FailureCode.TENANT_NOT_ACTIVE, 'only active tenants are rotated'));

/**
 * A rotation schedule: refused once the tenant closes (every run would be); a tenant suspended for now is
 * scheduled, and each run the schedule starts meets rotationRefusal.
 */
export const rotationScheduleRefusal: TenantRule = (tenant) => closedRefusal(tenant, 'its keys are not rotated');

/** A new key in a slot: an active tenant with a sub-account; a closing one never. */
export const keyIssueRefusal: TenantRule = (tenant) =>
  closedRefusal(tenant, 'it is issued no new key') ??
  (tenant.status === TenantStatus.active && tenant.subaccountId
    ? undefined
    : refusal(tenant, FailureCode.TENANT_NOT_ACTIVE, 'keys are issued to active tenants only'));

/**
 * A transfer (a top-up): an onboarded tenant, active or suspended, with a sub-account; a closing one never; and none
 * while its records, restored from a backup, wait for the drift check that records what the restore lost.
 */
export const transferRefusal: TenantRule = (tenant) =>
  closedRefusal(tenant, 'it takes no new transfers') ??
  ((tenant.status === TenantStatus.active || tenant.status === TenantStatus.suspended) && tenant.subaccountId
    ? moneyHoldRefusal(tenant)
    : refusal(
        tenant,
        FailureCode.TENANT_NOT_PROVISIONED,
        'top-ups need an onboarded (active or suspended) tenant with a sub-account',
      ));

/** New money of a tenant whose records went back in time waits for its drift check (issue 48). */
export const moneyHoldRefusal: TenantRule = (tenant) =>
  tenant.moneyHeldSince
    ? {
        code: FailureCode.RECORDS_RESTORED,
        rule: 'new money waits for a drift check after a restore of the records',
        message:
          `tenant ${tenant.externalRef}'s records were restored from a backup (${tenant.moneyHoldReason ?? 'found'} ` +
          `at ${tenant.moneyHeldSince.toISOString()}): its new top-ups wait until a drift check records what the ` +
          `restore lost; run tenantctl drift check ${tenant.externalRef}, then send the top-up again`,
      }
    : undefined;

/**
 * A plan converged onto a tenant (assigned, or rolled out): an active tenant with a sub-account; a closing one never.
 */
export const planConvergenceRefusal: TenantRule = (tenant) =>
  closedRefusal(tenant, 'it is moved onto no plan') ??
  (tenant.status === TenantStatus.active && tenant.subaccountId
    ? undefined
    : refusal(tenant, FailureCode.TENANT_NOT_ACTIVE, 'a plan is converged onto active tenants only'));

/** A funding policy (auto top-up): any tenant that is not closing (a policy may be set before onboarding ends). */
export const fundingPolicyRefusal: TenantRule = (tenant) => closedRefusal(tenant, 'it takes no funding policy');

/** A suspend: any tenant that is not closing (a close suspends and ends it itself); a run started anyway would fail. */
export const suspendRefusal: TenantRule = (tenant) => closedRefusal(tenant, 'it is not suspended');

/** What the resume rule reads besides the record: when a delayed close that waits out its window closes the tenant. */
export interface ResumeFacts extends TenantFacts {
  scheduledCloseAt: Date | null;
}

/**
 * A resume: never of a closing tenant, nor of one whose delayed close waits out its window (the close suspended
 * it; cancelling the close is what puts it back). A run started anyway would fail and leave the tenant suspended.
 */
export const resumeRefusal = (tenant: ResumeFacts): TenantRefusal | undefined =>
  closedRefusal(tenant, 'it is not resumed') ??
  (tenant.scheduledCloseAt
    ? refusal(
        tenant,
        FailureCode.CLOSE_SCHEDULED,
        `its close is scheduled for ${tenant.scheduledCloseAt.toISOString()}, and a tenant is not resumed inside ` +
          `its close window: cancel the close instead (tenantctl close --cancel ${tenant.externalRef} --reason "...")`,
      )
    : undefined);

/** What the resume's balance review reads besides the record: the tenant's floor, where it comes from, its wallet. */
export interface ResumeBalanceFacts extends TenantFacts {
  /** The tenant's plan's resumeBalanceFloorMicroUsd, else the server's RESUME_BALANCE_FLOOR_MICRO_USD (micro-USD). */
  floorMicroUsd: string;
  /** Where the floor comes from, as the message names it (the setting, or the plan version). */
  floorFrom: string;
  /** The wallet's balance on the platform (micro-USD); null when the platform shows none. */
  balanceMicroUsd: string | null;
}

/**
 * A resume's review: the wallet holds at least the resume floor (a floor of 0 checks nothing). A balance the
 * platform does not show cannot pass a floor. A run started anyway would fail and leave the tenant suspended.
 */
export const resumeBalanceRefusal = (tenant: ResumeBalanceFacts): TenantRefusal | undefined => {
  const floor = BigInt(tenant.floorMicroUsd);
  if (floor <= 0n) return undefined;
  const named = `the resume floor of ${floor} micro-USD (${tenant.floorFrom})`;
  if (tenant.balanceMicroUsd === null)
    return refusal(
      tenant,
      FailureCode.BALANCE_BELOW_FLOOR,
      `the platform shows no wallet balance, so ${named} cannot be checked`,
    );
  return BigInt(tenant.balanceMicroUsd) < floor
    ? refusal(
        tenant,
        FailureCode.BALANCE_BELOW_FLOOR,
        `its wallet holds ${tenant.balanceMicroUsd} micro-USD, below ${named}: fund it first`,
      )
    : undefined;
};

/**
 * The one error a client starter throws when a tenant may not do what was asked: it names the field
 * (`externalRef`), the failure code and the rule. The gateway answers it 409 with the code.
 */
export class TenantRefusedError extends Error {
  override name = 'TenantRefusedError';
  readonly field = 'externalRef';
  readonly code: TenantRefusalCode;
  readonly rule: string;
  constructor(refusal: TenantRefusal) {
    super(refusal.message);
    this.code = refusal.code;
    this.rule = refusal.rule;
  }
}

/** Throws TenantRefusedError when `rule` refuses the tenant. */
export function assertTenantAllows<F extends TenantFacts>(
  rule: (tenant: F) => TenantRefusal | undefined,
  tenant: F,
): void {
  const refused = rule(tenant);
  if (refused) throw new TenantRefusedError(refused);
}
