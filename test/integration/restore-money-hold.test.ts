import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backUpRecords, restoreRecords } from '../../chaos/records-backup.js';
import { RESTORE_DRIFT_POLICY } from '../../chaos/options.js';
import { upsertFundingPolicy } from '../../src/db/funding-store.js';
import { holdMoney } from '../../src/db/tenants-store.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { parseDriftPolicies } from '../../src/domain/drift-policy.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { listenGatewayOver, TEST_API_TOKEN } from '../harness/gateway-app.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';
import { callAs, HARNESS_OPERATOR, startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

/**
 * Issue 48: the records went back in time (a restore from a backup) after a top-up was made. Before, the signup
 * backend's next top-up was taken at once, and the tenant's daily cap, counted from records that had lost the first
 * transfer, let a second one through: 1.2 of a 1.0 cap moved in a day. Now Temporal is the witness (the top-up run it
 * shows completed has no record), the tenant's new money waits (409 RECORDS_RESTORED, naming the drift check), and the
 * drift check that records the lost transfer (counted in the caps on its day) lets money move again.
 */
const s = randomBytes(3).toString('hex');
const ref = `hold${s}`;
const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };

describe("a tenant's new money after a restore of the records", () => {
  let env: DriftEnv;
  let gateway: GatewayApp;
  let url: string;
  let subaccountId: string;
  let ops: OperatorGateway;
  const post = (key: string, amountMicroUsd: string) =>
    fetch(`${url}/v1/tenants/${ref}/transfers`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ amountMicroUsd, reason: 'restore hold test' }),
    }).then(async (r) => ({
      status: r.status,
      json: (await r.json()) as {
        data?: Record<string, unknown>;
        error?: { code: string; message: string; fields?: string[] };
      },
    }));
  const get = (path: string) =>
    fetch(`${url}${path}`, { headers: auth }).then(
      async (r) => (await r.json()) as { data?: Record<string, unknown> & { attention?: unknown } },
    );
  const transfersMade = () => env.sim.state().transfers.filter((t) => t.subaccountId === subaccountId);
  const holdOf = async () =>
    (
      await env.pool.query<{ since: Date | null; reason: string | null }>(
        'SELECT money_held_since AS since, money_hold_reason AS reason FROM tenants WHERE external_ref = $1',
        [ref],
      )
    ).rows[0];
  const auditActions = async () =>
    (
      await env.pool.query<{ action: string }>(
        `SELECT action FROM audit_log WHERE external_ref = $1 AND action LIKE 'tenant.money_%' ORDER BY id`,
        [ref],
      )
    ).rows.map((row) => row.action);

  beforeAll(async () => {
    const { policies, problems } = parseDriftPolicies(RESTORE_DRIFT_POLICY);
    expect(problems).toEqual([]);
    env = await createDriftEnv('hold', { policies, quietPeriodMs: 1_000 });
    ({ gateway, url } = await listenGatewayOver(env, { publicUrl: 'https://gateway.example' }));
    ops = await startOperatorGateway(env);
    ({ subaccountId } = await env.onboard(ref));
    await upsertFundingPolicy(env.pool, {
      externalRef: ref,
      belowMicroUsd: '1',
      toMicroUsd: '2',
      maxPerDayMicroUsd: '1000000',
      maxPerMonthMicroUsd: null,
      updatedBy: 'test',
    });
    await backUpRecords(env.databaseUrl);
    // Made after the backup: the restore loses its record, not its transfer.
    const first = await post('first', '600000');
    expect(first.status).toBe(202);
    await expect(env.client.workflow.getHandle(`fund:${ref}:first`).result()).resolves.toMatchObject({
      state: 'succeeded',
    });
    await restoreRecords(env.databaseUrl);
  }, 240_000);

  afterAll(async () => {
    await gateway?.app.close();
    await ops?.close();
    await env?.close();
  });

  it('holds the next top-up until a drift check has recorded the lost one, then counts it in the cap', async () => {
    expect(transfersMade()).toHaveLength(1);
    // The signup backend's next top-up: refused before any run starts, naming the field, the rule and the command.
    const held = await post('second', '600000');
    expect(held.status).toBe(409);
    expect(held.json.error).toMatchObject({ code: 'RECORDS_RESTORED', fields: ['externalRef'] });
    expect(held.json.error?.message).toMatch(
      new RegExp(`restored from a backup .*fund:${ref}:first.*tenantctl drift check ${ref}`),
    );
    await expect(env.client.workflow.getHandle(`fund:${ref}:second`).describe()).rejects.toThrow(/not found/i);
    expect((await holdOf())?.since).toBeInstanceOf(Date);
    // The tenant's own status, and the fleet's attention list, show the hold and its way out.
    const moneyHold = {
      workflowId: `money-hold:${ref}`,
      stage: 'money_held',
      lines: [expect.stringMatching(/^new top-ups held since .*restored from a backup/)],
      wayOut: [`tenantctl drift check ${ref}`],
    };
    expect((await get(`/v1/tenants/${ref}`)).data?.attention).toEqual([moneyHold]);
    const listed = (await get('/v1/tenants?attention=true')).data as unknown as Array<Record<string, unknown>>;
    expect(listed.find((t) => t.externalRef === ref)?.attention).toEqual([moneyHold]);
    expect(await auditActions()).toEqual(['tenant.money_held']);
    // Asked again, the same answer, one hold.
    expect((await post('second', '600000')).json.error?.code).toBe('RECORDS_RESTORED');
    expect(await auditActions()).toEqual(['tenant.money_held']);
    expect(transfersMade()).toHaveLength(1);

    // The runbook's drift check records the lost top-up as made (on the day the platform made it) and lifts the hold.
    await env.check();
    expect(await holdOf()).toEqual({ since: null, reason: null });
    expect(await auditActions()).toEqual(['tenant.money_held', 'tenant.money_hold_released']);
    expect((await get(`/v1/tenants/${ref}`)).data?.attention).toEqual([]);
    const { rows } = await env.pool.query<{ kind: string; amount: string; counted: boolean }>(
      `SELECT kind, amount_micro_usd::text AS amount, reserved_on IS NOT NULL AS counted FROM transfer_intents
        WHERE external_ref = $1 AND kind <> 'initial'`,
      [ref],
    );
    expect(rows).toEqual([{ kind: 'restored', amount: '600000', counted: true }]);

    // Money moves again, within the cap that now sees the first transfer: 600000 more would pass 1000000.
    const second = await post('second', '600000');
    expect(second.status).toBe(202);
    await expect(env.client.workflow.getHandle(`fund:${ref}:second`).result()).resolves.toMatchObject({
      state: 'cap_refused',
    });
    const third = await post('third', '300000');
    expect(third.status).toBe(202);
    await expect(env.client.workflow.getHandle(`fund:${ref}:third`).result()).resolves.toMatchObject({
      state: 'succeeded',
    });
    expect(transfersMade().map((t) => t.amountMicroUsd)).toEqual(['600000', '300000']);
  }, 240_000);

  it('POST /v1/imports/closed refuses a restore point it cannot use, naming since, and reads nothing else', async () => {
    const closed = (body: unknown) => callAs(ops.url, 'POST', '/v1/imports/closed', HARNESS_OPERATOR.token, body);
    // The route's permission is imports.manage: the signup backend's token is refused.
    expect((await callAs(url, 'POST', '/v1/imports/closed', TEST_API_TOKEN, { since: 'x' })).status).toBe(403);
    for (const since of ['yesterday', '2026-11-29', '2999-01-01T00:00:00Z', '2020-01-01T00:00:00Z', 42]) {
      const refused = await closed({ since });
      expect(refused.status, String(since)).toBe(400);
      expect(refused.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['since'] });
    }
    expect((await closed({ since: new Date().toISOString(), apply: 'yes' })).json.error).toMatchObject({
      code: 'INVALID_INPUT',
      fields: ['apply'],
    });
    // Nothing of this tenant was closed: a plan (no apply) lists none of it and records nothing. (Temporal here is
    // shared by every test file, whose closed tenants this database has no record of: they are listed, not ours.)
    const found = await closed({ since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(found.status).toBe(200);
    const data = found.json.data as { recorded: string[]; alreadyRecorded: string[]; rows: { externalRef: string }[] };
    expect(data).toMatchObject({ recorded: [], alreadyRecorded: [] });
    expect(data.rows.filter((r) => r.externalRef === ref)).toEqual([]);
  });

  it('holds a run started elsewhere too (the Web UI, the sweep): a top-up fails naming the rule, an auto top-up waits', async () => {
    // What a run that found its record gone does (a sibling attempt of the same hold is a no-op).
    expect(await holdMoney(env.pool, ref, 'a transfer run found its record gone', { actor: 'test' })).toBe(true);
    expect(await holdMoney(env.pool, ref, 'a second finding', { actor: 'test' })).toBe(false);
    const topUp = await startTopUp(
      env.client,
      { externalRef: ref, idempotencyKey: 'from-ui', amountMicroUsd: '1000' },
      { taskQueue: env.taskQueue },
    );
    await expect(topUp.result()).rejects.toMatchObject({
      cause: { type: 'RECORDS_RESTORED', message: expect.stringMatching(/a transfer run found its record gone/) },
    });
    const auto = await startTopUp(
      env.client,
      { externalRef: ref, idempotencyKey: 'auto-1', amountMicroUsd: '1000', kind: 'auto', requestedBy: 'sweep' },
      { taskQueue: env.taskQueue },
    );
    await expect(auto.result()).resolves.toMatchObject({ state: 'skipped', refusedBy: 'records_restored' });
    expect(transfersMade()).toHaveLength(2);
    const { rows } = await env.pool.query(
      `SELECT 1 FROM transfer_intents WHERE external_ref = $1 AND caller_key IN
      ('from-ui', 'auto-1')`,
      [ref],
    );
    expect(rows).toEqual([]);
    await env.check();
    expect(await holdOf()).toEqual({ since: null, reason: null });
  }, 120_000);
});
