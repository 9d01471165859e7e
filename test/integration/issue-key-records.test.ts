import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCountingEnv, type CountingEnv } from '../harness/counting-env.js';
import { TenantStatus } from '../../src/domain/tenant-rules.js';

/**
 * The key step's records against real Postgres and the simulator: a first create claims its record, with the
 * tenant's check and its first attempt, in one statement, and the onboarding's issue-and-verify opens the copy it
 * just sealed instead of reading it back (3 round trips, was 6); a retry, a closing tenant and a stored key
 * behave as before.
 */
describe('issue key: records and round trips', () => {
  let env: CountingEnv;
  beforeAll(async () => {
    env = await createCountingEnv('issue-key-records');
  });
  afterAll(async () => {
    await env?.close();
  });

  const tenant = (externalRef: string, status: TenantStatus = TenantStatus.created) =>
    env.recordedTenant(externalRef, status);
  const keyRow = async (externalRef: string) =>
    (
      await env.ctx.pool.query(
        `SELECT key_name, create_attempts, status, verified_at IS NOT NULL AS verified,
                (SELECT count(*)::int FROM key_secrets WHERE tenant_key_id = k.id) AS secrets
           FROM tenant_keys k WHERE external_ref = $1`,
        [externalRef],
      )
    ).rows;
  const keysOn = async (subaccountId: string) => (await env.platform().listTenantKeys({ subaccountId })).keys;

  it('a first issue and verify: one key named for attempt 1, stored, verified, in 3 statements', async () => {
    const subaccountId = await tenant('ik-first');
    const before = env.statements();
    const result = await env.activities.issueAndVerifyTenantKey({
      externalRef: 'ik-first',
      subaccountId,
      slot: 'default',
      generation: 1,
    });
    expect(env.statements() - before).toBe(3);
    expect(result).toMatchObject({ state: 'issued', verified: true, orphansRevoked: [] });
    expect(await keyRow('ik-first')).toEqual([
      { key_name: 'tpo-default-g1-a1', create_attempts: 1, status: 'active', verified: true, secrets: 1 },
    ]);
    const keys = await keysOn(subaccountId);
    expect(keys.map((k) => [k.name, k.status])).toEqual([['tpo-default-g1-a1', 'active']]);
    const audits = await env.ctx.pool.query(`SELECT action FROM audit_log WHERE external_ref = 'ik-first' ORDER BY id`);
    expect(audits.rows.map((r) => r.action)).toEqual(['key.issued', 'key.verified']);
  });

  it('again after the issue (a retry): the stored key, its stored copy opened and verified, nothing new', async () => {
    const subaccountId = await tenant('ik-again');
    const input = { externalRef: 'ik-again', subaccountId, slot: 'default', generation: 1 };
    const issued = await env.activities.issueTenantKey(input);
    const again = await env.activities.issueAndVerifyTenantKey(input);
    expect(again).toEqual({ ...issued, verified: true });
    // The retry took the proof over with the next claim (issue 44): create_attempts counts claims, not creates.
    expect(await keyRow('ik-again')).toEqual([
      { key_name: 'tpo-default-g1-a1', create_attempts: 2, status: 'active', verified: true, secrets: 1 },
    ]);
    expect(await keysOn(subaccountId)).toHaveLength(1);
  });

  it('after an attempt whose answer was lost: its key revoked as an orphan, the next attempt named -a2', async () => {
    const subaccountId = await tenant('ik-lost');
    // Attempt 1 claimed its record and its create reached the platform; the answer (and token) never came back.
    await env.ctx.pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
       VALUES ('ik-lost', 'default', 1, 'tpo-default-g1-a1', 'creating', 1)`,
    );
    const lost = await env.platform().createTenantKey({ subaccountId, name: 'tpo-default-g1-a1' });
    const result = await env.activities.issueTenantKey({
      externalRef: 'ik-lost',
      subaccountId,
      slot: 'default',
      generation: 1,
    });
    expect(result).toMatchObject({ state: 'issued', orphansRevoked: [lost.key.id] });
    expect(await keyRow('ik-lost')).toEqual([
      { key_name: 'tpo-default-g1-a2', create_attempts: 2, status: 'active', verified: false, secrets: 1 },
    ]);
    const keys = await keysOn(subaccountId);
    expect(keys.map((k) => [k.name, k.status]).sort()).toEqual([
      ['tpo-default-g1-a1', 'revoked'],
      ['tpo-default-g1-a2', 'active'],
    ]);
  });

  it.each([TenantStatus.closing, TenantStatus.closed])(
    'a %s tenant: refused naming its state, no key record made, nothing created',
    async (status) => {
      const ref = `ik-${status}`;
      const subaccountId = await tenant(ref, status);
      await expect(
        env.activities.issueAndVerifyTenantKey({ externalRef: ref, subaccountId, slot: 'default', generation: 1 }),
      ).rejects.toMatchObject({
        message: expect.stringContaining(`tenant ${ref} is ${status}: no new transfers or keys`),
      });
      expect(await keyRow(ref)).toEqual([]);
      expect(await keysOn(subaccountId)).toEqual([]);
    },
  );
});
