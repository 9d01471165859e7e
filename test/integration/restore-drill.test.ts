import { randomBytes } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subaccountCreateKey, transferKey } from '../../activities/idempotency-keys.js';
import { ONBOARDING_PURPOSE } from '../../src/domain/onboarding.js';
import { backUpRecords, restoreRecords } from '../../chaos/records-backup.js';
import { RESTORE_DRIFT_POLICY } from '../../chaos/options.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startAdoption, startRotation } from '../../src/client/keys/start-rotation.js';
import { startTopUp } from '../../src/client/money/start-top-up.js';
import { claimRestoredTopUp, findRecordedTopUp } from '../../src/client/money/top-up-precheck.js';
import { applyImport } from '../../src/client/imports/import-apply.js';
import { buildImportPlan } from '../../src/client/imports/import-plan.js';
import { importClosedTenants, type ClosedImport } from '../../src/client/imports/import-closed.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { listFindings } from '../../src/db/drift-findings-store.js';
import { insertTenantIfAbsent } from '../../src/db/tenants-store.js';
import { parseDriftPolicies } from '../../src/domain/drift-policy.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';
import { waitFor } from '../harness/rotation-env.js';
import { clearFaults, setFaults } from '../harness/onboarding-env.js';
import { topUpStatusQuery } from '../../workflows/fund-tenant-messages.js';
import { startNotifyReceiver } from '../../src/main/stack/notify-receiver.js';

/**
 * The restore drill, small and exact (issue 48): four tenants onboarded, the records backed up, then a top-up, a
 * rotation, a suspend and a close made; the backup restored while the worker runs; the runbook's recovery (drift with
 * the recording fixes, twice, the adoption of every key whose secret was lost, drift again). Afterwards the records
 * match the platform again and nothing was made twice. `npm run chaos -- --restore` is the same under load and faults.
 */
const s = randomBytes(3).toString('hex');
const ref = (name: string) => `rs${s}-${name}`;
const ACROSS = { externalRef: ref('across'), idempotencyKey: 'across-restore', amountMicroUsd: '40000' };
const FAST = { quietPeriod: '1s', propagationAllowance: '1s', pollInterval: '1s', quietDeadline: '5m' } as const;

describe('a restore of the records from a backup', () => {
  let env: DriftEnv;
  let notify: Awaited<ReturnType<typeof startNotifyReceiver>>;
  let backedUpAt: Date;
  let closedImport: ClosedImport;
  let acrossTopUp: Awaited<ReturnType<typeof startTopUp>>;
  let acrossWait: string;
  const ids: Record<string, { subaccountId: string; keyId: string }> = {};

  /** An onboarding with its funding, run to its end: the sub-account it made. */
  const onboardFunded = async (name: string, fundingMicroUsd: string) =>
    (
      await (
        await startOnboarding(
          env.client,
          { externalRef: ref(name), name, fundingMicroUsd },
          { taskQueue: env.taskQueue },
        )
      ).result()
    ).subaccountId;
  /** A suspend or a close of one of the drill's tenants, run to its end. */
  const lifecycle = async (action: 'suspend' | 'close', name: string) =>
    (
      await startLifecycle(
        env.client,
        action,
        { externalRef: ref(name), reason: 'restore drill' },
        { taskQueue: env.taskQueue },
      )
    ).result();

  beforeAll(async () => {
    const { policies, problems } = parseDriftPolicies(RESTORE_DRIFT_POLICY);
    expect(problems).toEqual([]);
    notify = await startNotifyReceiver();
    env = await createDriftEnv(
      'restore',
      { policies, quietPeriodMs: 1_000 },
      {},
      {
        defaultDeployer: 'notify',
        envVariable: 'TENANT_API_KEY',
        notify: { url: notify.url, secret: notify.secret, timeoutMs: 2_000 },
      },
    );
    for (const name of ['topped', 'rotated', 'suspended', 'closed', 'caught', 'paidclosed', 'rotclose'])
      ids[name] = await env.onboard(ref(name));
    // Onboarded with its funding before the backup; closed after it.
    ids.fundedclosed = { subaccountId: await onboardFunded('fundedclosed', '300000'), keyId: '' };

    // A rotation the backup catches open (both generations active, the old one not yet revoked), finished after it;
    // another whose tenant is closed after the restore, before any drift check.
    const caughtOpen = async (name: string) => {
      const rotation = await startRotation(
        env.client,
        { externalRef: ref(name), reason: 'restore drill: caught open', options: { ...FAST, quietPeriod: '4s' } },
        { taskQueue: env.taskQueue, operator: 'drill' },
      );
      await waitFor(async () => {
        const { rows } = await env.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM tenant_keys WHERE external_ref = $1 AND status = 'active'`,
          [ref(name)],
        );
        return rows[0]!.n === 2 ? true : undefined;
      }, `the ${name} rotation to hold two active keys`);
      return rotation;
    };
    const caught = await caughtOpen('caught');
    const rotclose = await caughtOpen('rotclose');
    backedUpAt = new Date();
    await backUpRecords(env.databaseUrl);
    await caught.result();
    await rotclose.result();
    // Onboarded (and funded) after the backup: the restore leaves no record of it at all.
    await onboardFunded('late', '1000000');
    const topUp = { externalRef: ref('topped'), idempotencyKey: 'after-backup', amountMicroUsd: '250000' };
    await (await startTopUp(env.client, topUp, { taskQueue: env.taskQueue })).result();
    await (
      await startRotation(
        env.client,
        { externalRef: ref('rotated'), reason: 'restore drill', options: FAST },
        { taskQueue: env.taskQueue, operator: 'drill' },
      )
    ).result();
    await lifecycle('suspend', 'suspended');
    await lifecycle('close', 'closed');
    // Topped up, then closed, after the backup: the restore loses the top-up's record, and the closed wallet shows
    // nothing (404); only Temporal's runs know the transfer.
    const paid = { externalRef: ref('paidclosed'), idempotencyKey: 'before-close', amountMicroUsd: '125000' };
    await (await startTopUp(env.client, paid, { taskQueue: env.taskQueue })).result();
    await lifecycle('close', 'paidclosed');
    // A whole life between the backup and the restore: onboarded (funded), topped up, closed. No record survives
    // it, and the platform answers nothing about a closed sub-account.
    ids.brief = { subaccountId: await onboardFunded('brief', '700000'), keyId: '' };
    const briefTopUp = { externalRef: ref('brief'), idempotencyKey: 'brief-1', amountMicroUsd: '50000' };
    await (await startTopUp(env.client, briefTopUp, { taskQueue: env.taskQueue })).result();
    await lifecycle('close', 'brief');
    await lifecycle('close', 'fundedclosed');
    // Onboarded after the backup, then a top-up whose transfer the platform made but whose answer was lost, still
    // reconciling (the wallet unreadable) when the restore takes the tenant's record from under it.
    const acrossId = await onboardFunded('across', '100000');
    await setFaults(env.sim, [
      { method: 'POST', path: `/subaccounts/${acrossId}/wallet/transfers`, mode: 'drop-after-commit', count: 1 },
      { method: 'GET', path: `/subaccounts/${acrossId}/wallet`, mode: 'error-before-commit', status: 503 },
    ]);
    acrossTopUp = await startTopUp(
      env.client,
      { ...ACROSS, options: { reconcileInterval: '1s', pollCeiling: '2s' } },
      { taskQueue: env.taskQueue },
    );
    await waitFor(async () => {
      const status = await acrossTopUp.query(topUpStatusQuery).catch(() => undefined);
      return status?.stage === 'reconciling_transfer' ? true : undefined;
    }, 'the top-up to reconcile');
    await restoreRecords(env.databaseUrl);
    await clearFaults(env.sim);
    // Before: the run failed TENANT_NOT_FOUND with its transfer made. Now it waits for the import, and says so.
    acrossWait = await waitFor(async () => {
      const status = await acrossTopUp.query(topUpStatusQuery).catch(() => undefined);
      return status?.waitingFor?.includes('import') ? status.waitingFor : undefined;
    }, 'the top-up to wait for the import');
    // A backup taken between its sub-account's record and its funding's intent (the chaos drill met one: the intent
    // is written a moment after): the records hold the tenant with its sub-account and no intent of the funding.
    await env.pool.query(
      `DELETE FROM transfer_sends WHERE intent_id IN (SELECT id FROM transfer_intents WHERE external_ref = $1)`,
      [ref('fundedclosed')],
    );
    await env.pool.query('DELETE FROM transfer_intents WHERE external_ref = $1', [ref('fundedclosed')]);
    // A close before any drift check, of a tenant whose rotation the records hold open (its run ended after the
    // backup). Before: the close waited for that rotation to roll back until its deadline (10 min, then
    // ROTATION_STILL_OPEN), and drift skipped the tenant while the close ran (the restore drill met it).
    await lifecycle('close', 'rotclose');

    // The runbook's recovery.
    await env.check();
    await env.check();
    const plan = await buildImportPlan({ platform: env.platform, db: env.pool });
    const imported = await applyImport({ client: env.client, db: env.pool }, plan, {
      only: [ref('late'), ref('across')],
      requestedBy: 'drill',
      taskQueue: env.taskQueue,
    });
    expect(imported.results).toEqual([
      expect.objectContaining({ ok: true, externalRef: ref('across') }),
      expect.objectContaining({ ok: true, externalRef: ref('late') }),
    ]);
    // Two operators apply it at once: one records each tenant, the other finds it recorded; nothing is written twice.
    const applyClosed = () =>
      importClosedTenants({ client: env.client, pool: env.pool }, backedUpAt, { apply: true, requestedBy: 'drill' });
    const [first, second] = await Promise.all([applyClosed(), applyClosed()]);
    closedImport = {
      ...first,
      recorded: [...first.recorded, ...second.recorded],
      alreadyRecorded: [...first.alreadyRecorded, ...second.alreadyRecorded],
    };
    const { rows } = await env.pool.query<{ ref: string; slot: string }>(
      `SELECT DISTINCT external_ref AS ref, slot FROM tenant_keys WHERE status = 'unmanaged'`,
    );
    for (const { ref: externalRef, slot } of rows)
      await (
        await startAdoption(
          { client: env.client, db: env.pool },
          { externalRef, slot, options: FAST },
          { taskQueue: env.taskQueue },
        )
      ).result();
    await env.check();
  }, 240_000);

  afterAll(async () => {
    await env?.close();
    await notify?.close();
  });

  const statusOf = async (name: string) =>
    (await env.pool.query<{ status: string }>('SELECT status FROM tenants WHERE external_ref = $1', [ref(name)]))
      .rows[0]?.status;

  it('records the top-up made after the backup as made, and a retry of it sends nothing', async () => {
    const transfersOf = () => env.sim.state().transfers.filter((t) => t.subaccountId === ids.topped!.subaccountId);
    // Onboarded without funding: the top-up is the tenant's one transfer.
    expect(transfersOf()).toHaveLength(1);
    const { rows } = await env.pool.query<{ state: string; kind: string; amount: string }>(
      `SELECT state, kind, amount_micro_usd::text AS amount FROM transfer_intents
        WHERE external_ref = $1 ORDER BY created_at`,
      [ref('topped')],
    );
    expect(rows).toEqual([{ state: 'succeeded', kind: 'restored', amount: '250000' }]);
    // The signup backend sends the same top-up again: the run of that key answers, nothing is sent.
    const again = { externalRef: ref('topped'), idempotencyKey: 'after-backup', amountMicroUsd: '250000' };
    await (await startTopUp(env.client, again, { taskQueue: env.taskQueue })).result();
    expect(transfersOf()).toHaveLength(1);
    // Through the gateway, the same request joins that ended run, which recorded nothing the records kept: the
    // transfer drift recorded again becomes this key's record, and answers (before: 409 in progress, forever).
    expect(await findRecordedTopUp(env.pool, again)).toBeUndefined();
    const claimed = await claimRestoredTopUp(env.pool, { ...again, requestedBy: 'drill' });
    expect(claimed).toMatchObject({ state: 'succeeded', kind: 'top-up', callerKey: 'after-backup' });
    expect(await findRecordedTopUp(env.pool, again)).toMatchObject({ id: claimed!.id });
    await expect(
      claimRestoredTopUp(env.pool, { ...again, amountMicroUsd: '1', requestedBy: 'drill' }),
    ).resolves.toBeUndefined();
    expect(transfersOf()).toHaveLength(1);
  });

  it('records a tenant onboarded and closed between the backup and the restore from its runs, once', async () => {
    const ours = closedImport.rows.filter((row) => row.externalRef.startsWith(ref('')));
    expect(ours.map((row) => row.externalRef)).toEqual([ref('brief')]);
    expect(closedImport.recorded.filter((r) => r.startsWith(ref('')))).toEqual([ref('brief')]);
    const raced = closedImport.alreadyRecorded.filter((r) => r.startsWith(ref('')));
    expect(raced.length).toBeLessThanOrEqual(1);
    expect(await statusOf('brief')).toBe('closed');
    const made = env.sim.state().transfers.filter((t) => t.subaccountId === ids.brief!.subaccountId);
    expect(made.map((t) => t.amountMicroUsd).sort()).toEqual(['50000', '700000']);
    const { rows } = await env.pool.query<{ key: string; kind: string; amount: string; subaccount: string }>(
      `SELECT i.idempotency_key AS key, i.kind, i.amount_micro_usd::text AS amount, t.subaccount_id AS subaccount
         FROM transfer_intents i JOIN tenants t USING (external_ref)
        WHERE i.external_ref = $1 AND i.state = 'succeeded' ORDER BY i.amount_micro_usd`,
      [ref('brief')],
    );
    // Under the keys the platform saw, as made: the onboarding's funding and the top-up.
    expect(rows).toEqual([
      {
        key: made.find((t) => t.amountMicroUsd === '50000')!.idempotencyKey,
        kind: 'restored',
        amount: '50000',
        subaccount: ids.brief!.subaccountId,
      },
      {
        key: made.find((t) => t.amountMicroUsd === '700000')!.idempotencyKey,
        kind: 'initial',
        amount: '700000',
        subaccount: ids.brief!.subaccountId,
      },
    ]);
    // Again: found recorded, nothing written twice.
    const again = await importClosedTenants({ client: env.client, pool: env.pool }, backedUpAt, {
      apply: true,
      requestedBy: 'drill',
    });
    expect(again.rows.filter((row) => row.externalRef.startsWith(ref('')))).toEqual([]);
    const { rows: count } = await env.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM transfer_intents WHERE external_ref = $1',
      [ref('brief')],
    );
    expect(count[0]!.n).toBe(2);
  });

  it("records the funding of a tenant closed since whose intent the records lost, from its onboarding's result", async () => {
    expect(await statusOf('fundedclosed')).toBe('closed');
    const made = env.sim.state().transfers.filter((t) => t.subaccountId === ids.fundedclosed!.subaccountId);
    expect(made.map((t) => t.amountMicroUsd)).toEqual(['300000']);
    const { rows } = await env.pool.query<{ key: string; purpose: string; kind: string; state: string }>(
      `SELECT idempotency_key AS key, purpose, kind, state FROM transfer_intents WHERE external_ref = $1`,
      [ref('fundedclosed')],
    );
    expect(rows).toEqual([
      { key: made[0]!.idempotencyKey, purpose: 'initial-funding', kind: 'initial', state: 'succeeded' },
    ]);
  });

  it('records the top-up of a tenant closed after the backup from its run: the closed wallet shows nothing', async () => {
    expect(await statusOf('paidclosed')).toBe('closed');
    const made = env.sim.state().transfers.filter((t) => t.subaccountId === ids.paidclosed!.subaccountId);
    expect(made).toHaveLength(1);
    const { rows } = await env.pool.query<{ key: string; state: string; amount: string; transferId: string | null }>(
      `SELECT idempotency_key AS key, state, amount_micro_usd::text AS amount, platform_transfer_id AS "transferId"
         FROM transfer_intents WHERE external_ref = $1`,
      [ref('paidclosed')],
    );
    // Under the key the platform saw, as made, once; and the finding that did it names the run.
    expect(rows).toEqual([
      { key: made[0]!.idempotencyKey, state: 'succeeded', amount: '125000', transferId: made[0]!.id },
    ]);
    const adopted = (await listFindings(env.pool, { externalRef: ref('paidclosed') })).find(
      (f) => f.kind === 'transfer_unrecorded',
    );
    expect(adopted).toMatchObject({ fix: 'adopt_transfer', subject: made[0]!.idempotencyKey });
    expect(JSON.stringify(adopted!.evidence)).toMatch(new RegExp(`made by fund:${ref('paidclosed')}:before-close`));
  });

  it('replaces the key whose secret the restore lost, and keeps exactly one active key', async () => {
    const platformActive = env.sim
      .state()
      .apiKeys.filter((k) => k.subaccountId === ids.rotated!.subaccountId && k.status === 'active');
    const { rows } = await env.pool.query<{ platform_key_id: string; status: string; sealed: boolean }>(
      `SELECT k.platform_key_id, k.status, s.tenant_key_id IS NOT NULL AS sealed
         FROM tenant_keys k LEFT JOIN key_secrets s ON s.tenant_key_id = k.id
        WHERE k.external_ref = $1 AND k.status IN ('active', 'unmanaged')`,
      [ref('rotated')],
    );
    expect(platformActive).toHaveLength(1);
    expect(rows).toEqual([{ platform_key_id: platformActive[0]!.id, status: 'active', sealed: true }]);
  });

  it('imports the tenant onboarded after the backup with its funding recorded as made, and replaces its key', async () => {
    expect(await statusOf('late')).toBe('active');
    const subaccountId = env.sim.state().subaccounts.find((x) => x.externalRef === ref('late'))!.id;
    const made = env.sim.state().transfers.filter((t) => t.subaccountId === subaccountId);
    const { rows } = await env.pool.query<{ key: string; kind: string; purpose: string }>(
      `SELECT idempotency_key AS key, kind, purpose FROM transfer_intents WHERE external_ref = $1 AND state = 'succeeded'`,
      [ref('late')],
    );
    // The onboarding's transfer under its own key, not an opening balance: the platform's one transfer, once.
    expect(made).toHaveLength(1);
    expect(rows).toEqual([{ key: made[0]!.idempotencyKey, kind: 'initial', purpose: 'initial-funding' }]);
    const active = env.sim.state().apiKeys.filter((k) => k.subaccountId === subaccountId && k.status === 'active');
    const { rows: keys } = await env.pool.query<{ id: string; status: string }>(
      `SELECT platform_key_id AS id, status FROM tenant_keys WHERE external_ref = $1 AND status IN ('active', 'unmanaged')`,
      [ref('late')],
    );
    expect(active).toHaveLength(1);
    expect(keys).toEqual([{ id: active[0]!.id, status: 'active' }]);
  });

  it('lets a top-up whose transfer was made wait for its tenant, gone by the restore, and end with that transfer', async () => {
    expect(acrossWait).toContain(`tenantctl import apply --only ${ref('across')}`);
    const result = await acrossTopUp.result();
    expect(result).toMatchObject({ state: 'succeeded' });
    const subaccountId = env.sim.state().subaccounts.find((x) => x.externalRef === ref('across'))!.id;
    const made = env.sim.state().transfers.filter((t) => t.subaccountId === subaccountId);
    // The funding and the top-up, each once; the top-up's record is the run's own (claimed from the import's).
    expect(made.map((t) => t.amountMicroUsd).sort()).toEqual(['100000', '40000']);
    const { rows } = await env.pool.query<{ key: string; purpose: string; callerKey: string | null }>(
      `SELECT idempotency_key AS key, purpose, caller_key AS "callerKey" FROM transfer_intents
        WHERE external_ref = $1 AND amount_micro_usd = 40000`,
      [ref('across')],
    );
    const topUpKey = made.find((t) => t.amountMicroUsd === '40000')!.idempotencyKey;
    expect(rows).toEqual([{ key: topUpKey, purpose: 'top-up:across-restore', callerKey: 'across-restore' }]);
  });

  it('lets an onboarding in flight across the restore record the sub-account it holds as it ends', async () => {
    // The record as a restore leaves it: the onboarding began before the backup, created its sub-account after.
    await insertTenantIfAbsent(env.pool, {
      externalRef: ref('inflight'),
      name: 'In flight',
      createIdempotencyKey: `k-${s}`,
    });
    await env.activities.markTenantActive({ externalRef: ref('inflight'), subaccountId: 'sub_inflight' });
    const { rows } = await env.pool.query('SELECT status, subaccount_id FROM tenants WHERE external_ref = $1', [
      ref('inflight'),
    ]);
    expect(rows).toEqual([{ status: 'active', subaccount_id: 'sub_inflight' }]);
  });

  it('records the end of a rotation the backup caught open, and its old key revoked', async () => {
    const { rows: rotations } = await env.pool.query<{ state: string }>(
      'SELECT state FROM key_rotations WHERE external_ref = $1',
      [ref('caught')],
    );
    expect(rotations).toEqual([{ state: 'completed' }]);
    const active = env.sim
      .state()
      .apiKeys.filter((k) => k.subaccountId === ids.caught!.subaccountId && k.status === 'active');
    const { rows: keys } = await env.pool.query<{ id: string; generation: number; sealed: boolean }>(
      `SELECT k.platform_key_id AS id, k.generation, s.tenant_key_id IS NOT NULL AS sealed
         FROM tenant_keys k LEFT JOIN key_secrets s ON s.tenant_key_id = k.id
        WHERE k.external_ref = $1 AND k.status = 'active'`,
      [ref('caught')],
    );
    expect(active).toHaveLength(1);
    expect(keys).toEqual([{ id: active[0]!.id, generation: 2, sealed: true }]);
  });

  it('writes again the tenant record a restore took from under a running onboarding, and the onboarding goes on', async () => {
    const externalRef = ref('reborn');
    const { subaccount } = await env.platform.createSubaccount({
      name: 'Reborn',
      externalRef,
      idempotencyKey: subaccountCreateKey(externalRef),
    });
    // A key the run's first create made before the restore took its record, and with it its secret.
    const { key: lost } = await env.platform.createTenantKey({
      subaccountId: subaccount.id,
      name: 'tpo-default-g1-a1',
    });
    const inOnboarding = new MockActivityEnvironment({ workflowType: 'onboardTenant' });
    const funded = await inOnboarding.run(env.activities.fundWallet, {
      externalRef,
      subaccountId: subaccount.id,
      amountMicroUsd: '1000000',
      purpose: ONBOARDING_PURPOSE,
    });
    expect(funded).toMatchObject({ state: 'succeeded' });
    const issued = await inOnboarding.run(env.activities.issueAndVerifyTenantKey, {
      externalRef,
      subaccountId: subaccount.id,
      slot: 'default',
      generation: 1,
    });
    expect(issued).toMatchObject({ state: 'issued', verified: true });
    const { rows } = await env.pool.query(
      `SELECT name, status, subaccount_id AS "subaccountId", records_restored_at IS NOT NULL AS restored,
        (SELECT count(*)::int FROM audit_log WHERE external_ref = $1 AND action = 'tenant.record_restored') AS audited
        FROM tenants WHERE external_ref = $1`,
      [externalRef],
    );
    expect(rows).toEqual([
      { name: 'Reborn', status: 'created', subaccountId: subaccount.id, restored: true, audited: 1 },
    ]);
    const keys = env.sim.state().apiKeys.filter((k) => k.subaccountId === subaccount.id);
    // The lost key is revoked (never handed out: the onboarding had not ended); the new one is past its attempt.
    expect(keys.map((k) => [k.name, k.status]).sort()).toEqual([
      ['tpo-default-g1-a1', 'revoked'],
      ['tpo-default-g1-a2', 'active'],
    ]);
    expect(keys.find((k) => k.status === 'active')!.id).not.toBe(lost.id);
  });

  it('two attempts of each step at once, the record gone under them: one record, one transfer, one live key', async () => {
    const externalRef = ref('twins');
    const { subaccount } = await env.platform.createSubaccount({
      name: 'Twins',
      externalRef,
      idempotencyKey: subaccountCreateKey(externalRef),
    });
    // A key an attempt made before the restore took the record; then two attempts of each step overlap.
    await env.platform.createTenantKey({ subaccountId: subaccount.id, name: 'tpo-default-g1-a1' });
    const attempt = (n: number) => new MockActivityEnvironment({ workflowType: 'onboardTenant', attempt: n });
    const fund = { externalRef, subaccountId: subaccount.id, amountMicroUsd: '700000', purpose: ONBOARDING_PURPOSE };
    const funded = await Promise.all([2, 3].map((n) => attempt(n).run(env.activities.fundWallet, fund)));
    expect(funded.some((r) => (r as { state: string }).state === 'succeeded')).toBe(true);
    const key = { externalRef, subaccountId: subaccount.id, slot: 'default', generation: 1 };
    await Promise.allSettled([2, 3].map((n) => attempt(n).run(env.activities.issueAndVerifyTenantKey, key)));
    // The retry of the fenced one (as the workflow retries it) finds the key its sibling stored.
    await attempt(4).run(env.activities.issueAndVerifyTenantKey, key);
    const { rows } = await env.pool.query(
      `SELECT (SELECT count(*)::int FROM tenants WHERE external_ref = $1) AS records,
        (SELECT count(*)::int FROM audit_log WHERE external_ref = $1 AND action = 'tenant.record_restored') AS restored,
        (SELECT count(*)::int FROM transfer_intents WHERE external_ref = $1) AS intents,
        (SELECT count(*)::int FROM tenant_keys WHERE external_ref = $1 AND status = 'active') AS active`,
      [externalRef],
    );
    expect(rows).toEqual([{ records: 1, restored: 1, intents: 1, active: 1 }]);
    expect(env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id)).toHaveLength(1);
    const live = env.sim.state().apiKeys.filter((k) => k.subaccountId === subaccount.id && k.status === 'active');
    expect(live).toHaveLength(1);
  });

  it('revokes the key an earlier attempt made when a retry finds the key record gone (restored under it)', async () => {
    const externalRef = ref('retried');
    const { subaccount } = await env.platform.createSubaccount({
      name: 'Retried',
      externalRef,
      idempotencyKey: subaccountCreateKey(externalRef),
    });
    // The tenant's record survived the restore; its key record, and the key attempt 1 made after it, did not.
    await insertTenantIfAbsent(env.pool, { externalRef, name: 'Retried', createIdempotencyKey: `k2-${s}` });
    await env.pool.query(`UPDATE tenants SET subaccount_id = $2, status = 'created' WHERE external_ref = $1`, [
      externalRef,
      subaccount.id,
    ]);
    await env.platform.createTenantKey({ subaccountId: subaccount.id, name: 'tpo-default-g1-a1' });
    const retry = new MockActivityEnvironment({ workflowType: 'onboardTenant', attempt: 3 });
    const issued = await retry.run(env.activities.issueAndVerifyTenantKey, {
      externalRef,
      subaccountId: subaccount.id,
      slot: 'default',
      generation: 1,
    });
    expect(issued).toMatchObject({ state: 'issued', verified: true });
    const keys = env.sim.state().apiKeys.filter((k) => k.subaccountId === subaccount.id);
    expect(keys.map((k) => [k.name, k.status]).sort()).toEqual([
      ['tpo-default-g1-a1', 'revoked'],
      ['tpo-default-g1-a2', 'active'],
    ]);
  });

  it("fails an older generation's unfinished create, left by a restore, when a newer generation is stored", async () => {
    const externalRef = ref('retried');
    const { rows: sub } = await env.pool.query<{ id: string }>(
      'SELECT subaccount_id AS id FROM tenants WHERE external_ref = $1',
      [externalRef],
    );
    // The records as a restore can leave them: generation 1 of a slot still creating, with no key.
    await env.pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
       VALUES ($1, 'extra', 1, 'tpo-extra-g1-a1', 'creating', 1)`,
      [externalRef],
    );
    const issued = await new MockActivityEnvironment({ workflowType: 'rotateTenantKey' }).run(
      env.activities.issueTenantKey,
      { externalRef, subaccountId: sub[0]!.id, slot: 'extra', generation: 2 },
    );
    expect(issued).toMatchObject({ state: 'issued' });
    const { rows } = await env.pool.query(
      `SELECT generation, status FROM tenant_keys WHERE external_ref = $1 AND slot = 'extra' ORDER BY generation`,
      [externalRef],
    );
    expect(rows).toEqual([
      { generation: 1, status: 'failed' },
      { generation: 2, status: 'active' },
    ]);
  });

  it('writes no record again outside an onboarding: the transfer waits for the import, then takes what it made', async () => {
    const externalRef = ref('stranger');
    const { subaccount } = await env.platform.createSubaccount({
      name: 'Stranger',
      externalRef,
      idempotencyKey: subaccountCreateKey(externalRef),
    });
    const elsewhere = new MockActivityEnvironment({ workflowType: 'fundTenant' });
    const step = { externalRef, subaccountId: subaccount.id, amountMicroUsd: '1000000', purpose: 'top-up:x' };
    const waiting = await elsewhere.run(env.activities.fundWallet, step);
    // Before: TENANT_NOT_FOUND, a failed run whose transfer may have been made. Now: a wait naming the import.
    expect(waiting).toMatchObject({ state: 'unknown', recordsMissing: expect.stringContaining('import apply') });
    expect(await statusOf('stranger')).toBeUndefined();
    expect(env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id)).toEqual([]);
    // The run's transfer made before the restore took its records (the same key: a digest of tenant and purpose).
    const idempotencyKey = transferKey(externalRef, 'top-up:x', 1);
    await env.platform.transfer({ subaccountId: subaccount.id, amountMicroUsd: '1000000', idempotencyKey });
    await expect(elsewhere.run(env.activities.fundWallet, step)).resolves.toMatchObject({ state: 'unknown' });
    // The runbook's import records the tenant and the transfer under its key; the run's next try takes it as made.
    const plan = await buildImportPlan({ platform: env.platform, db: env.pool });
    const imported = await applyImport({ client: env.client, db: env.pool }, plan, {
      only: [externalRef],
      requestedBy: 'drill',
      taskQueue: env.taskQueue,
    });
    expect(imported.results).toEqual([expect.objectContaining({ ok: true, externalRef })]);
    const [first, second] = await Promise.all([
      elsewhere.run(env.activities.fundWallet, step),
      elsewhere.run(env.activities.fundWallet, step),
    ]);
    expect(first).toMatchObject({ state: 'succeeded', idempotencyKey });
    expect(second).toEqual(first);
    expect(env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id)).toHaveLength(1);
    const { rows } = await env.pool.query<{ purpose: string; state: string }>(
      'SELECT purpose, state FROM transfer_intents WHERE external_ref = $1',
      [externalRef],
    );
    expect(rows).toEqual([{ purpose: 'top-up:x', state: 'succeeded' }]);
  });

  it('closes a tenant whose rotation the records hold open after its run ended, recording that end', async () => {
    expect(await statusOf('rotclose')).toBe('closed');
    const { rows } = await env.pool.query<{ state: string; outcome: { runStatus?: string } }>(
      'SELECT state, outcome FROM key_rotations WHERE external_ref = $1',
      [ref('rotclose')],
    );
    expect(rows).toEqual([
      expect.objectContaining({ state: 'completed', outcome: expect.objectContaining({ runStatus: 'COMPLETED' }) }),
    ]);
    const active = env.sim.state().apiKeys.filter((k) => k.subaccountId === ids.rotclose!.subaccountId);
    expect(active.filter((k) => k.status === 'active')).toEqual([]);
  });

  it('follows the suspend and the close our own runs made after the backup', async () => {
    expect(await statusOf('suspended')).toBe('suspended');
    expect(await statusOf('closed')).toBe('closed');
    expect(await statusOf('topped')).toBe('active');
    // The close revoked every key before it completed: the records lost that too, and follow it.
    const { rows } = await env.pool.query('SELECT status FROM tenant_keys WHERE external_ref = $1', [ref('closed')]);
    expect(rows).toEqual([{ status: 'revoked' }]);
  });

  it('records, before a close, what the wallet shows under our keys that the records lost', async () => {
    const externalRef = ref('closer');
    ids.closer = await env.onboard(externalRef);
    const topUp = { externalRef, idempotencyKey: 'lost-top-up', amountMicroUsd: '120000' };
    await (await startTopUp(env.client, topUp, { taskQueue: env.taskQueue })).result();
    // The records as a restore leaves them: the top-up's intent gone, the transfer on the platform.
    await env.pool.query(
      `DELETE FROM transfer_sends WHERE intent_id IN
      (SELECT id FROM transfer_intents WHERE external_ref = $1)`,
      [externalRef],
    );
    await env.pool.query('DELETE FROM transfer_intents WHERE external_ref = $1', [externalRef]);
    await (
      await startLifecycle(env.client, 'close', { externalRef, reason: 'drill' }, { taskQueue: env.taskQueue })
    ).result();
    const { rows } = await env.pool.query(
      `SELECT kind, state, amount_micro_usd::text AS amount FROM transfer_intents WHERE external_ref = $1`,
      [externalRef],
    );
    expect(rows).toEqual([{ kind: 'restored', state: 'succeeded', amount: '120000' }]);
    expect(env.sim.state().transfers.filter((t) => t.subaccountId === ids.closer!.subaccountId)).toHaveLength(1);
  });

  it('follows a close the backup caught begun (closing), which no longer makes the tenant busy forever', async () => {
    const externalRef = ref('halfclosed');
    ids.halfclosed = await env.onboard(externalRef);
    await (
      await startLifecycle(env.client, 'close', { externalRef, reason: 'drill' }, { taskQueue: env.taskQueue })
    ).result();
    // The records as a backup taken during the close leaves them: closing, the key still active.
    await env.pool.query(`UPDATE tenants SET status = 'closing', closed_at = NULL WHERE external_ref = $1`, [
      externalRef,
    ]);
    await env.pool.query(`UPDATE tenant_keys SET status = 'active', revoked_at = NULL WHERE external_ref = $1`, [
      externalRef,
    ]);
    const result = await env.check({ externalRef });
    expect(result.totals.skipped).toBe(0);
    expect(await statusOf('halfclosed')).toBe('closed');
    const { rows } = await env.pool.query('SELECT status FROM tenant_keys WHERE external_ref = $1', [externalRef]);
    expect(rows).toEqual([{ status: 'revoked' }]);
  });

  it('leaves no finding open on any of them', async () => {
    const open = (await listFindings(env.pool, { openOnly: true })).filter((f) => f.externalRef?.startsWith(`rs${s}`));
    expect(open.map((f) => `${f.kind} ${f.externalRef}`)).toEqual([]);
  });
});
