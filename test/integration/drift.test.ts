import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFindings, type DriftFindingRow } from '../../src/db/drift-findings-store.js';
import { insertTenantIfAbsent } from '../../src/db/tenants-store.js';
import { insertTransferIntentIfAbsent, updateTransferIntent } from '../../src/db/transfer-intents-store.js';
import { scheduleTenantRotation } from '../../src/client/keys/rotation-schedules.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { ReconcileFleetResult } from '../../workflows/reconcile-fleet.js';
import { runCli } from '../harness/cli.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';

/**
 * Drift made behind the orchestrator's back through the platform's own API (a console, a script),
 * found by one check with its evidence; the fixes the policy allows applied once and audited.
 */
const s = randomBytes(3).toString('hex');
const ref = (name: string) => `dr${s}-${name}`;
const slot = `d${s}`;

async function auditCount(env: DriftEnv, action: string): Promise<number> {
  const { rows } = await env.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM audit_log WHERE action = $1::text`,
    [action],
  );
  return rows[0]!.n;
}
function byKind(findings: DriftFindingRow[], kind: string, externalRef?: string): DriftFindingRow[] {
  return findings.filter((f) => f.kind === kind && (externalRef === undefined || f.externalRef === externalRef));
}

describe('drift check against the platform', () => {
  let env: DriftEnv;
  const ids: Record<string, { subaccountId: string; keyId: string }> = {};
  let first: ReconcileFleetResult;
  let strayId: string;
  let unrecordedId: string;
  let handMadeKey: string;
  let ourNamedOrphan: string;

  beforeAll(async () => {
    env = await createDriftEnv('drift', {
      policies: { subaccount_unrecorded: 'fix', key_revoked_on_platform: 'fix', key_orphan: 'fix' },
    });
    for (const name of [
      'clean',
      'dup',
      'susp',
      'gone',
      'resumed',
      'orphan',
      'revoked',
      'xfer',
      'money',
      'old',
      'oldsched',
    ])
      ids[name] = await env.onboard(ref(name));

    // A pending onboarding (record, no sub-account) whose create landed but was never recorded.
    await insertTenantIfAbsent(env.pool, {
      externalRef: ref('pending'),
      name: 'Pending',
      createIdempotencyKey: `k-${s}-pending`,
    });
    unrecordedId = String(
      (
        await env.api(
          'POST',
          '/subaccounts/create',
          { name: 'Pending', externalRef: ref('pending') },
          { 'idempotency-key': `oob-${s}-1` },
        )
      ).id,
    );
    // A sub-account made in the console with a ref we never recorded; another carrying a recorded ref.
    strayId = String(
      (
        await env.api(
          'POST',
          '/subaccounts/create',
          { name: 'Stray', externalRef: ref('nobody') },
          { 'idempotency-key': `oob-${s}-2` },
        )
      ).id,
    );
    await env.api(
      'POST',
      '/subaccounts/create',
      { name: 'Dup', externalRef: ref('dup') },
      { 'idempotency-key': `oob-${s}-3` },
    );
    // Lifecycle behind our back: suspended, closed, and resumed after we suspended it.
    await env.api('POST', `/subaccounts/${ids.susp!.subaccountId}/suspend`);
    await env.api('POST', `/subaccounts/${ids.gone!.subaccountId}/close`);
    await (
      await startLifecycle(
        env.client,
        'suspend',
        { externalRef: ref('resumed'), reason: 'test' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    await env.api('POST', `/subaccounts/${ids.resumed!.subaccountId}/resume`);
    // Keys: one by hand, one with our naming (a lost create), one of ours revoked elsewhere.
    handMadeKey = String(
      (await env.api('POST', `/subaccounts/${ids.orphan!.subaccountId}/api-keys/create`, { name: 'made-by-hand' })).id,
    );
    ourNamedOrphan = String(
      (await env.api('POST', `/subaccounts/${ids.orphan!.subaccountId}/api-keys/create`, { name: 'tpo-default-g7-a2' }))
        .id,
    );
    await env.api('POST', `/subaccounts/${ids.revoked!.subaccountId}/api-keys/${ids.revoked!.keyId}/revoke`);
    // Money: a transfer left unknown by a crashed run; a transfer made outside our records.
    const { row } = await insertTransferIntentIfAbsent(env.pool, {
      externalRef: ref('xfer'),
      purpose: 'top-up',
      amountMicroUsd: '1000',
      idempotencyKey: `tpo-xfer-${s}`,
    });
    await updateTransferIntent(env.pool, row.id, ['pending'], { state: 'unknown' });
    await env.api(
      'POST',
      `/subaccounts/${ids.money!.subaccountId}/wallet/transfers`,
      { amountMicroUsd: '2500000', idempotencyKey: `oob-${s}-4` },
      { 'idempotency-key': `oob-${s}-4` },
    );
    // Key age: a key of a slot of our own, 100 days old; one with a rotation schedule, one without.
    for (const name of ['old', 'oldsched']) {
      await env.activities.issueTenantKey({
        externalRef: ref(name),
        subaccountId: ids[name]!.subaccountId,
        slot,
        generation: 1,
      });
      await env.pool.query(
        `UPDATE tenant_keys SET activated_at = now() - interval '100 days' WHERE ` +
          `external_ref = $1::text AND slot = $2::text`,
        [ref(name), slot],
      );
    }
    await scheduleTenantRotation(env.client, { externalRef: ref('oldsched'), slot }, { every: '30d' }, env.taskQueue);

    first = await env.check();
  }, 240_000);
  afterAll(async () => {
    await env?.client.schedule
      .getHandle(`rotation:${ref('oldsched')}:${slot}`)
      .delete()
      .catch(() => undefined);
    await env?.close();
  });

  it('finds each kind of drift in one check, with its evidence', async () => {
    const all = await listFindings(env.pool, { limit: 1000 });
    const mine = all.filter((f) => f.externalRef?.startsWith(`dr${s}-`));
    const unrecorded = byKind(mine, 'subaccount_unrecorded');
    expect(unrecorded.map((f) => f.subject).sort()).toEqual([strayId, unrecordedId].sort());
    expect(unrecorded.find((f) => f.subject === strayId)!.evidence).toMatchObject({
      record: null,
      platform: { externalRef: ref('nobody') },
    });
    expect(byKind(mine, 'subaccount_mismatch', ref('dup'))).toHaveLength(1);
    expect(byKind(mine, 'subaccount_suspended', ref('susp'))[0]!.evidence).toMatchObject({
      record: { status: 'active' },
      platform: { status: 'suspended' },
    });
    expect(byKind(mine, 'subaccount_gone', ref('gone'))[0]).toMatchObject({
      status: 'open',
      subject: ids.gone!.subaccountId,
    });
    expect(byKind(mine, 'subaccount_not_suspended', ref('resumed'))[0]!.evidence).toMatchObject({
      record: { status: 'suspended' },
      platform: { status: 'operating' },
    });
    const orphans = byKind(mine, 'key_orphan', ref('orphan'));
    expect(orphans.map((f) => f.subject).sort()).toEqual([handMadeKey, ourNamedOrphan].sort());
    expect(orphans.find((f) => f.subject === ourNamedOrphan)!.evidence).toMatchObject({
      namedByUs: true,
      key: { name: 'tpo-default-g7-a2', status: 'active' },
    });
    expect(byKind(mine, 'key_revoked_on_platform', ref('revoked'))[0]!.evidence).toMatchObject({
      key: { id: ids.revoked!.keyId, status: 'revoked' },
    });
    expect(byKind(mine, 'transfer_unknown', ref('xfer'))[0]).toMatchObject({
      subject: `tpo-xfer-${s}`,
      evidence: { platformShows: 'not in recent transfers' },
    });
    expect(byKind(mine, 'balance_unexplained', ref('money'))[0]!.evidence).toMatchObject({
      excessMicroUsd: '2500000',
      unrecordedTransfers: [expect.objectContaining({ idempotencyKey: `oob-${s}-4` })],
    });
    expect(byKind(mine, 'key_rotation_overdue').map((f) => f.externalRef)).toEqual([ref('old')]);
    expect(mine.filter((f) => f.externalRef === ref('clean') || f.externalRef === ref('oldsched'))).toEqual([]);
    expect(first.totals.failed).toBe(0);
  });

  it('applies the allowed fixes once and audits them; an orphan in use stays', async () => {
    const pending = await env.pool.query(
      `SELECT subaccount_id AS id, status FROM tenants WHERE external_ref = $1::text`,
      [ref('pending')],
    );
    expect(pending.rows[0]).toEqual({ id: unrecordedId, status: 'created' });
    const { rows: key } = await env.pool.query(`SELECT status FROM tenant_keys WHERE platform_key_id = $1::text`, [
      ids.revoked!.keyId,
    ]);
    expect(key[0]!.status).toBe('revoked');
    // The orphan named by us was created just now: not quiet for the hour, reported, not revoked.
    expect(env.sim.state().apiKeys.find((k) => k.id === ourNamedOrphan)!.status).toBe('active');
    expect(first.fixes.map((f) => f.fix).sort()).toEqual(['adopt_subaccount', 'mark_key_revoked']);
    const audits = await env.pool.query(
      `SELECT subject, details->>'fix' AS fix FROM audit_log WHERE action = 'drift.fixed' ORDER BY id`,
    );
    expect(audits.rows).toEqual([
      expect.objectContaining({ fix: expect.any(String) }),
      expect.objectContaining({ fix: expect.any(String) }),
    ]);
  });

  it('revokes an orphan named by us once it has been quiet, never a hand-made one', async () => {
    const result = await env.check({ externalRef: ref('orphan'), options: { quietPeriod: '0s' } });
    expect(result.fixes).toEqual([{ kind: 'key_orphan', subject: ourNamedOrphan, fix: 'revoke_orphan_key' }]);
    const keys = env.sim.state().apiKeys;
    expect(keys.find((k) => k.id === ourNamedOrphan)!.status).toBe('revoked');
    expect(keys.find((k) => k.id === handMadeKey)!.status).toBe('active');
    const again = await env.check({ externalRef: ref('orphan'), options: { quietPeriod: '0s' } });
    expect(again.fixes).toEqual([]);
    const audits = await env.pool.query(
      `SELECT count(*)::int AS n FROM audit_log WHERE action = 'drift.fixed' AND subject = $1::text`,
      [ourNamedOrphan],
    );
    expect(audits.rows[0]!.n).toBe(1);
  });

  it('changes nothing on a second check', async () => {
    const before = await listFindings(env.pool, { limit: 1000 });
    const audited = {
      opened: await auditCount(env, 'drift.opened'),
      fixed: await auditCount(env, 'drift.fixed'),
      resolved: await auditCount(env, 'drift.resolved'),
    };
    const second = await env.check();
    expect(second.fixes).toEqual([]);
    const after = await listFindings(env.pool, { limit: 1000 });
    const shape = (rows: DriftFindingRow[]) =>
      rows.map((f) => ({ id: f.id, kind: f.kind, subject: f.subject, status: f.status, firstSeen: f.firstSeen }));
    expect(shape(after)).toEqual(shape(before));
    expect({
      opened: await auditCount(env, 'drift.opened'),
      fixed: await auditCount(env, 'drift.fixed'),
      resolved: await auditCount(env, 'drift.resolved'),
    }).toEqual(audited);
    // The orphan was revoked since (the other fixes resolved within the first check).
    expect(second.openTotal).toBe(first.openTotal - 1);
  });

  it('marks a finding resolved, never deletes it, when the drift is undone', async () => {
    await env.api('POST', `/subaccounts/${ids.susp!.subaccountId}/resume`);
    await env.check({ externalRef: ref('susp') });
    const rows = await listFindings(env.pool, { externalRef: ref('susp') });
    expect(rows).toEqual([
      expect.objectContaining({ kind: 'subaccount_suspended', status: 'resolved', resolution: 'not_seen' }),
    ]);
    expect(await auditCount(env, 'drift.resolved')).toBeGreaterThanOrEqual(1);
  });

  it('skips a tenant with a running onboarding and reports it as skipped', async () => {
    // An onboarding waiting for parent funds keeps running; a hand-made key under it is not touched.
    const handle = await startOnboarding(
      env.client,
      { externalRef: ref('busy'), name: 'Busy', fundingMicroUsd: '9999999999' },
      { taskQueue: env.taskQueue },
    );
    try {
      for (;;) {
        const { rows } = await env.pool.query(
          `SELECT subaccount_id FROM tenants WHERE external_ref = $1::text AND subaccount_id IS NOT NULL`,
          [ref('busy')],
        );
        if (rows.length) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const result = await env.check({ externalRef: ref('busy') });
      expect(result.totals).toMatchObject({ skipped: 1, tenantsChecked: 0 });
      expect(result.skipped).toEqual([
        { externalRef: ref('busy'), reason: expect.stringContaining('onboardTenant running') },
      ]);
      expect(await listFindings(env.pool, { externalRef: ref('busy') })).toEqual([]);
    } finally {
      await handle.terminate('test over');
    }
  });

  it('lists findings with tenantctl drift list', async () => {
    const listed = await runCli(['drift', 'list', '--json', '--open', '--tenant', ref('money')], env.cliEnv);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        kind: 'balance_unexplained',
        status: 'open',
        evidence: expect.objectContaining({ excessMicroUsd: '2500000' }),
      }),
    ]);
    const text = await runCli(['drift', 'list'], env.cliEnv);
    expect(text.stdout).toContain('subaccount_gone');
  });
});
