import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createCountingEnv, type CountingEnv } from '../harness/counting-env.js';
import { getFundingParent, noteParentShortfall } from '../../src/db/funding-store.js';
import { TenantStatus } from '../../src/domain/tenant-rules.js';

/**
 * Issue 49: the Postgres statements each onboarding step sends, pinned (a counting pool; each statement is a round
 * trip and Postgres CPU), with what they must still write: the records, their audit rows and their events. A fresh
 * onboarding is 10: begin 3 (the preflight's read, the ownership record, the sub-account), funding 3 (the intent with
 * the tenant's check, the send's claim, the outcome with its event and the parent's shortfall), key 3, active 1.
 */
describe('onboarding steps: statements per step', () => {
  let env: CountingEnv;
  beforeAll(async () => {
    env = await createCountingEnv('onboarding-statements');
  });
  afterAll(async () => {
    await env?.close();
  });

  async function counted<T>(step: () => Promise<T>): Promise<[T, number]> {
    const before = env.statements();
    const result = await step();
    return [result, env.statements() - before];
  }
  const audited = async (externalRef: string) =>
    (
      await env.ctx.pool.query<{ action: string }>(`SELECT action FROM audit_log WHERE external_ref = $1 ORDER BY id`, [
        externalRef,
      ])
    ).rows.map((r) => r.action);
  const events = async (externalRef: string) =>
    (
      await env.ctx.pool.query<{ type: string }>(`SELECT type FROM event_outbox WHERE external_ref = $1 ORDER BY seq`, [
        externalRef,
      ])
    ).rows.map((r) => r.type);
  const transfersTo = (subaccountId: string) =>
    env.sim.state().transfers.filter((t) => t.subaccountId === subaccountId).length;
  const shortfall = async () => (await getFundingParent(env.ctx.pool)).insufficientMicroUsd;
  const recordedTenant = (externalRef: string, status: TenantStatus) => env.recordedTenant(externalRef, status);

  it('a fresh onboarding: begin 3, funding 3, key 3, active 1, with every audit row and event written', async () => {
    const externalRef = 'os-fresh';
    const [begun, begin] = await counted(() =>
      env.activities.beginOnboarding({
        input: { externalRef, name: 'Fresh', fundingMicroUsd: '1000' },
        workflowType: 'onboardTenant',
      }),
    );
    expect(begin).toBe(3);
    if (begun.step.lookupNeeded) throw new Error('a fresh create needs no lookup');
    const { subaccountId } = begun.step;
    const fundInput = { externalRef, subaccountId, amountMicroUsd: '1000', purpose: 'initial-funding' };
    const [funded, funding] = await counted(() => env.activities.fundWallet(fundInput));
    expect(funded.state).toBe('succeeded');
    expect(funding).toBe(3);
    const [issued, key] = await counted(() =>
      env.activities.issueAndVerifyTenantKey({ externalRef, subaccountId, slot: 'default', generation: 1 }),
    );
    expect(issued.state).toBe('issued');
    expect(key).toBe(3);
    const [, active] = await counted(() => env.activities.markTenantActive({ externalRef, subaccountId }));
    expect(active).toBe(1);

    expect(await audited(externalRef)).toEqual(
      expect.arrayContaining(['tenant.recorded', 'tenant.created', 'transfer.intent', 'transfer.succeeded']),
    );
    expect(await audited(externalRef)).toContain('tenant.activated');
    expect(await events(externalRef)).toEqual(
      expect.arrayContaining(['transfer.succeeded', 'key.issued', 'tenant.onboarded']),
    );
    // A repeat of the funding step moves no money: the recorded outcome, one statement, nothing sent.
    const transfersBefore = transfersTo(subaccountId);
    const [again, repeat] = await counted(() => env.activities.fundWallet(fundInput));
    expect(again).toEqual(funded);
    expect(repeat).toBe(1);
    expect(transfersTo(subaccountId)).toBe(transfersBefore);
    expect(transfersBefore).toBe(1);
  });

  it("refuses a closing tenant's funding in the intent's own statement: nothing recorded, nothing sent", async () => {
    const externalRef = 'os-closing';
    const subaccountId = await recordedTenant(externalRef, TenantStatus.closing);
    const [refused, sent] = await counted(() =>
      env.activities
        .fundWallet({ externalRef, subaccountId, amountMicroUsd: '1000', purpose: 'initial-funding' })
        .then(() => undefined)
        .catch((error: unknown) => error),
    );
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect((refused as ApplicationFailure).type).toBe('TENANT_CLOSED');
    expect(sent).toBe(1);
    expect(
      (await env.ctx.pool.query(`SELECT 1 FROM transfer_intents WHERE external_ref = $1`, [externalRef])).rowCount,
    ).toBe(0);
    expect(transfersTo(subaccountId)).toBe(0);
  });

  it("a success clears the parent's shortfall it covers in the outcome's statement, audited; a larger one stays", async () => {
    const small = await recordedTenant('os-covers', TenantStatus.created);
    await noteParentShortfall(env.ctx.pool, '2000', 'test');
    const [covered, coveredStatements] = await counted(() =>
      env.activities.fundWallet({
        externalRef: 'os-covers',
        subaccountId: small,
        amountMicroUsd: '2000',
        purpose: 'initial-funding',
      }),
    );
    expect(covered.state).toBe('succeeded');
    // The three statements of a funding, and the parent.funded audit row of the state it cleared.
    expect(coveredStatements).toBe(4);
    expect(await shortfall()).toBeNull();
    expect(await audited('os-covers')).toContain('parent.funded');

    const other = await recordedTenant('os-short', TenantStatus.created);
    await noteParentShortfall(env.ctx.pool, '5000', 'test');
    const done = await env.activities.fundWallet({
      externalRef: 'os-short',
      subaccountId: other,
      amountMicroUsd: '1000',
      purpose: 'initial-funding',
    });
    expect(done.state).toBe('succeeded');
    expect(await shortfall()).toBe('5000');
    expect(await audited('os-short')).not.toContain('parent.funded');
  });
});
