import { describe, expect, it } from 'vitest';
import {
  assertTenantAllows,
  CLOSING_STATES,
  fundingPolicyRefusal,
  isClosing,
  keyIssueRefusal,
  resumeBalanceRefusal,
  resumeRefusal,
  rotationRefusal,
  rotationScheduleRefusal,
  suspendRefusal,
  TenantRefusedError,
  TenantStatus,
  transferRefusal,
  type TenantFacts,
  type TenantRule,
} from '../../src/domain/tenant-rules.js';

/**
 * The one home of "may this tenant be rotated / issued a key / funded": every status against every rule, so a
 * change to a rule shows here before it shows on a surface (the gateway, tenantctl, an activity).
 */
const onboarded = (status: string) => ({ externalRef: 't-1', status, subaccountId: 'sub_1' });
const codeOf = (rule: TenantRule, tenant: TenantFacts) => rule(tenant)?.code ?? 'allowed';
const everyStatus = Object.values(TenantStatus);
const table = (rule: TenantRule) =>
  Object.fromEntries(everyStatus.map((status) => [status, codeOf(rule, onboarded(status))]));

describe('tenant rules', () => {
  it('counts closing and closed, and only those, as closing', () => {
    expect(everyStatus.filter(isClosing)).toEqual(['closing', 'closed']);
    expect(CLOSING_STATES).toEqual(['closing', 'closed']);
    expect(isClosing('not-a-status')).toBe(false);
  });

  it('rotates (or adopts for) active tenants only, and says TENANT_CLOSED for a closing one', () => {
    expect(table(rotationRefusal)).toEqual({
      creating: 'TENANT_NOT_ACTIVE',
      created: 'TENANT_NOT_ACTIVE',
      active: 'allowed',
      cancelled: 'TENANT_NOT_ACTIVE',
      failed: 'TENANT_NOT_ACTIVE',
      suspended: 'TENANT_NOT_ACTIVE',
      closing: 'TENANT_CLOSED',
      closed: 'TENANT_CLOSED',
    });
    expect(codeOf(rotationRefusal, { externalRef: 't-1', status: 'active', subaccountId: null })).toBe(
      'TENANT_NOT_ACTIVE',
    );
    expect(rotationRefusal(onboarded('closing'))?.message).toBe('tenant t-1 is closing: its keys are not rotated');
  });

  it('makes a rotation schedule for any tenant that is not closing (a suspended one waits its turn)', () => {
    expect(Object.entries(table(rotationScheduleRefusal)).filter(([, code]) => code !== 'allowed')).toEqual([
      ['closing', 'TENANT_CLOSED'],
      ['closed', 'TENANT_CLOSED'],
    ]);
  });

  it('issues a key to active tenants with a sub-account only', () => {
    expect(table(keyIssueRefusal)).toEqual({ ...table(rotationRefusal) });
    expect(codeOf(keyIssueRefusal, { externalRef: 't-1', status: 'active', subaccountId: null })).toBe(
      'TENANT_NOT_ACTIVE',
    );
    expect(keyIssueRefusal(onboarded('suspended'))?.rule).toBe('keys are issued to active tenants only');
  });

  it('takes a transfer for an onboarded tenant, active or suspended, and none once it closes', () => {
    expect(table(transferRefusal)).toEqual({
      creating: 'TENANT_NOT_PROVISIONED',
      created: 'TENANT_NOT_PROVISIONED',
      active: 'allowed',
      cancelled: 'TENANT_NOT_PROVISIONED',
      failed: 'TENANT_NOT_PROVISIONED',
      suspended: 'allowed',
      closing: 'TENANT_CLOSED',
      closed: 'TENANT_CLOSED',
    });
    expect(codeOf(transferRefusal, { externalRef: 't-1', status: 'suspended', subaccountId: null })).toBe(
      'TENANT_NOT_PROVISIONED',
    );
  });

  it('holds the transfers of a tenant whose records were restored until its drift check (RECORDS_RESTORED)', () => {
    const held = (status: string) => ({
      ...onboarded(status),
      moneyHeldSince: new Date('2026-11-29T09:00:00Z'),
      moneyHoldReason: 'Temporal shows top-up runs completed that its records lost: fund:t-1:k1',
    });
    const heldTable = Object.fromEntries(everyStatus.map((status) => [status, codeOf(transferRefusal, held(status))]));
    // A closing or unprovisioned tenant keeps its own answer; an onboarded one is held, whatever its status.
    expect(heldTable).toMatchObject({ active: 'RECORDS_RESTORED', suspended: 'RECORDS_RESTORED' });
    expect(heldTable).toMatchObject({ closing: 'TENANT_CLOSED', creating: 'TENANT_NOT_PROVISIONED' });
    expect(transferRefusal(held('active'))?.message).toBe(
      "tenant t-1's records were restored from a backup (Temporal shows top-up runs completed that its records " +
        'lost: fund:t-1:k1 at 2026-11-29T09:00:00.000Z): its new top-ups wait until a drift check records what the ' +
        'restore lost; run tenantctl drift check t-1, then send the top-up again',
    );
    // Nothing else is held: the rules of rotations, keys and policies read no hold.
    expect(codeOf(rotationRefusal, held('active'))).toBe('allowed');
    expect(codeOf(fundingPolicyRefusal, held('active'))).toBe('allowed');
    expect(codeOf(transferRefusal, { ...held('active'), moneyHeldSince: null })).toBe('allowed');
  });

  it('takes a funding policy from any tenant that is not closing, onboarded or not', () => {
    expect(codeOf(fundingPolicyRefusal, { externalRef: 't-1', status: 'creating', subaccountId: null })).toBe(
      'allowed',
    );
    expect(Object.entries(table(fundingPolicyRefusal)).filter(([, code]) => code !== 'allowed')).toEqual([
      ['closing', 'TENANT_CLOSED'],
      ['closed', 'TENANT_CLOSED'],
    ]);
  });

  it('resumes a tenant that is not closing, unless its delayed close waits out its window (CLOSE_SCHEDULED)', () => {
    const resumeTable = (scheduledCloseAt: Date | null) =>
      Object.fromEntries(
        everyStatus.map((status) => [
          status,
          resumeRefusal({ ...onboarded(status), scheduledCloseAt })?.code ?? 'allowed',
        ]),
      );
    expect(Object.entries(resumeTable(null)).filter(([, code]) => code !== 'allowed')).toEqual([
      ['closing', 'TENANT_CLOSED'],
      ['closed', 'TENANT_CLOSED'],
    ]);
    const closeAt = new Date('2030-01-31T00:00:00.000Z');
    expect(resumeTable(closeAt)).toMatchObject({ suspended: 'CLOSE_SCHEDULED', closing: 'TENANT_CLOSED' });
    expect(resumeRefusal({ ...onboarded('suspended'), scheduledCloseAt: closeAt })?.message).toBe(
      'tenant t-1 is suspended: its close is scheduled for 2030-01-31T00:00:00.000Z, and a tenant is not resumed ' +
        'inside its close window: cancel the close instead (tenantctl close --cancel t-1 --reason "...")',
    );
  });

  it('suspends any tenant that is not closing, and says TENANT_CLOSED for a closing or closed one', () => {
    expect(Object.entries(table(suspendRefusal)).filter(([, code]) => code !== 'allowed')).toEqual([
      ['closing', 'TENANT_CLOSED'],
      ['closed', 'TENANT_CLOSED'],
    ]);
    expect(suspendRefusal(onboarded('closed'))?.message).toBe('tenant t-1 is closed: it is not suspended');
  });

  it('resumes a tenant whose wallet holds at least its resume floor (BALANCE_BELOW_FLOOR naming the floor)', () => {
    const facts = (balanceMicroUsd: string | null, floorMicroUsd: string) => ({
      ...onboarded('suspended'),
      balanceMicroUsd,
      floorMicroUsd,
      floorFrom: 'RESUME_BALANCE_FLOOR_MICRO_USD',
    });
    expect(resumeBalanceRefusal(facts('999', '1000'))).toEqual({
      code: 'BALANCE_BELOW_FLOOR',
      rule:
        'its wallet holds 999 micro-USD, below the resume floor of 1000 micro-USD ' +
        '(RESUME_BALANCE_FLOOR_MICRO_USD): fund it first',
      message:
        'tenant t-1 is suspended: its wallet holds 999 micro-USD, below the resume floor of 1000 micro-USD ' +
        '(RESUME_BALANCE_FLOOR_MICRO_USD): fund it first',
    });
    expect(resumeBalanceRefusal(facts(null, '1000'))?.message).toBe(
      'tenant t-1 is suspended: the platform shows no wallet balance, so the resume floor of 1000 micro-USD ' +
        '(RESUME_BALANCE_FLOOR_MICRO_USD) cannot be checked',
    );
    expect(resumeBalanceRefusal(facts('1000', '1000'))).toBeUndefined();
    // A floor of 0 checks nothing, not even a balance the platform does not show.
    expect(resumeBalanceRefusal(facts(null, '0'))).toBeUndefined();
    expect(resumeBalanceRefusal(facts('0', '0'))).toBeUndefined();
  });

  it('throws one error naming the field, the code and the rule', () => {
    const error = (() => {
      try {
        assertTenantAllows(rotationRefusal, onboarded('closed'));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(TenantRefusedError);
    expect(error).toMatchObject({
      name: 'TenantRefusedError',
      field: 'externalRef',
      code: 'TENANT_CLOSED',
      rule: 'its keys are not rotated',
    });
    expect(() => assertTenantAllows(rotationRefusal, onboarded('active'))).not.toThrow();
  });
});
