/**
 * Drift reports a tenant that differs from its plan (issue 33), as an operator meets it: tenants onboarded on a
 * plan, then changed behind the plan's back (a slot's key revoked, the auto top-up policy edited, a rotation
 * Schedule retimed or deleted), and `tenantctl drift check` run as a child process against the gateway. Each
 * difference is one report-only finding naming the commands that converge the tenant; a tenant matching its
 * plan has none; nothing is changed by the check; a tenant put back as the plan says is resolved by the next.
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DriftFindingRow } from '../../src/db/drift-findings-store.js';
import { findFundingPolicy, upsertFundingPolicy } from '../../src/db/funding-store.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { rotationScheduleId } from '../../src/domain/ids.js';
import type { ReconcileFleetResult } from '../../workflows/reconcile-fleet.js';
import { runCli } from '../harness/cli.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';
import { waitFor } from '../harness/gateway-app.js';
import { callAs, HARNESS_OPERATOR } from '../harness/operator-gateway.js';

const s = randomBytes(3).toString('hex');
const PLAN = `dp${s}`;
const ref = (name: string) => `dp${s}-${name}`;
const POLICY = { below: '1000000', to: '3000000', maxPerDay: '10000000' };
const SLOTS = ['default', 'web'];
type Finding = Omit<DriftFindingRow, 'firstSeen' | 'lastSeen'>;

describe('drift against the plan a tenant is on', () => {
  let env: DriftEnv;
  const schedules: string[] = [];
  const tenants = ['match', 'slot', 'policy', 'sched'];

  const check = async (args: string[] = []) => {
    const cli = await runCli(['drift', 'check', '--json', ...args], env.cliEnv, 120_000);
    expect(cli.code, cli.stderr).toBe(0);
    return JSON.parse(cli.stdout) as ReconcileFleetResult & { findings: Finding[] };
  };
  const planFindings = (findings: Finding[], name: string) =>
    findings
      .filter((f) => f.externalRef === ref(name) && f.kind.startsWith('plan_'))
      .map((f) => [f.kind, f.subject])
      .sort();

  /** The drift activities' own Temporal client, counting the schedules they read one by one. */
  let visibility: Connection;
  const described: string[] = [];

  beforeAll(async () => {
    visibility = await Connection.connect({ address: inject('temporalAddress') });
    const temporal = new Client({ connection: visibility, namespace: inject('temporalNamespace') });
    const getHandle = temporal.schedule.getHandle.bind(temporal.schedule);
    temporal.schedule.getHandle = (id: string) => {
      described.push(id);
      return getHandle(id);
    };
    env = await createDriftEnv('drift-plans', { temporal });
    const url = env.cliEnv['TENANTCTL_GATEWAY_URL']!;
    const made = await callAs(url, 'POST', '/v1/plans', HARNESS_OPERATOR.token, {
      name: PLAN,
      keySlots: SLOTS,
      rotation: { interval: '90d' },
      autoTopUp: POLICY,
    });
    expect(made.status, JSON.stringify(made.json)).toBe(201);
    await Promise.all(
      tenants.map(async (name) => {
        const handle = await startOnboarding(
          env.client,
          { externalRef: ref(name), name: `Tenant ${name}`, plan: PLAN },
          { taskQueue: env.taskQueue, db: env.pool },
        );
        await handle.result();
        for (const slot of SLOTS) schedules.push(rotationScheduleId(ref(name), slot));
      }),
    );

    // Behind the plan's back: the web key revoked on the platform and in our records (as a console and a
    // hand-run fix would leave it), the policy edited by hand, one schedule retimed and another deleted.
    const { rows } = await env.pool.query<{ id: string; platformKeyId: string }>(
      `UPDATE tenant_keys SET status = 'revoked', revoked_at = now() WHERE external_ref = $1::text AND slot = 'web'
        AND status = 'active' RETURNING id, platform_key_id AS "platformKeyId"`,
      [ref('slot')],
    );
    expect(rows).toHaveLength(1);
    const subaccountId = env.sim.state().subaccounts.find((a) => a.externalRef === ref('slot'))!.id;
    await env.api('POST', `/subaccounts/${subaccountId}/api-keys/${rows[0]!.platformKeyId}/revoke`);
    await upsertFundingPolicy(env.pool, {
      externalRef: ref('policy'),
      belowMicroUsd: POLICY.below,
      toMicroUsd: '5000000',
      maxPerDayMicroUsd: POLICY.maxPerDay,
      maxPerMonthMicroUsd: null,
      updatedBy: 'someone-by-hand',
    });
    await env.client.schedule
      .getHandle(rotationScheduleId(ref('sched'), 'web'))
      .update((previous) => ({ ...previous, spec: { intervals: [{ every: '30d' }] } }));
    await env.client.schedule.getHandle(rotationScheduleId(ref('sched'), 'default')).delete();
    // Schedule listings are eventually consistent: wait until one shows what was just done.
    await waitFor(
      async () => {
        const seen: Record<string, number | undefined> = {};
        for await (const listed of env.client.schedule.list())
          if (schedules.includes(listed.scheduleId)) seen[listed.scheduleId] = listed.spec?.intervals?.[0]?.every;
        return seen;
      },
      (seen) =>
        Object.keys(seen).length === schedules.length - 1 &&
        seen[rotationScheduleId(ref('sched'), 'web')] === 30 * 86_400_000,
      30_000,
      'the schedule listing',
    );
  }, 180_000);

  afterAll(async () => {
    for (const id of schedules)
      await env?.client.schedule
        .getHandle(id)
        .delete()
        .catch((error: unknown) => {
          if (!(error instanceof ScheduleNotFoundError)) throw error;
        });
    await env?.close();
    await visibility?.close();
  });

  it('tenantctl drift check reports each difference from the plan, report only, and none for a matching tenant', async () => {
    described.length = 0;
    const result = await check();
    // One listing of the schedules for the whole check; Temporal read one by one only where a tenant differs.
    expect(described.sort()).toEqual([
      rotationScheduleId(ref('sched'), 'default'),
      rotationScheduleId(ref('sched'), 'web'),
    ]);
    expect(result.totals).toMatchObject({ tenantsChecked: 4, skipped: 0, failed: 0, fixesApplied: 0 });
    expect(planFindings(result.findings, 'match')).toEqual([]);
    expect(result.findings.filter((f) => f.externalRef === ref('match'))).toEqual([]);
    expect(planFindings(result.findings, 'slot')).toEqual([['plan_slot_missing', `${ref('slot')}:web`]]);
    expect(planFindings(result.findings, 'policy')).toEqual([['plan_policy_differs', ref('policy')]]);
    expect(planFindings(result.findings, 'sched')).toEqual([
      ['plan_schedule_differs', rotationScheduleId(ref('sched'), 'default')],
      ['plan_schedule_differs', rotationScheduleId(ref('sched'), 'web')],
    ]);
    expect(result.openByKind).toMatchObject({ plan_slot_missing: 1, plan_policy_differs: 1, plan_schedule_differs: 2 });

    const byKind = (kind: string) => result.findings.filter((f) => f.kind === kind);
    expect(byKind('plan_policy_differs')[0]!.evidence).toMatchObject({
      plan: { name: PLAN, version: 1 },
      planPolicy: { ...POLICY, maxPerMonth: null },
      record: { ...POLICY, to: '5000000', maxPerMonth: null },
    });
    expect(
      byKind('plan_schedule_differs')
        .map((f) => f.evidence['reason'])
        .sort(),
    ).toEqual(['no rotation schedule', 'the schedule rotates at another interval']);
    for (const f of result.findings.filter((x) => x.kind.startsWith('plan_'))) {
      expect(f.fix).toBeNull();
      expect(f.evidence['advice']).toContain(`tenantctl plans rollout ${PLAN}`);
      expect(f.evidence['advice']).toContain('tenantctl plans assign');
    }

    // Report only: the check changed nothing it reported.
    expect((await findFundingPolicy(env.pool, ref('policy')))?.toMicroUsd).toBe('5000000');
    const retimed = await env.client.schedule.getHandle(rotationScheduleId(ref('sched'), 'web')).describe();
    expect(retimed.spec.intervals?.[0]?.every).toBe(30 * 86_400_000);
    const { rows: keys } = await env.pool.query(
      `SELECT 1 FROM tenant_keys WHERE external_ref = $1::text AND slot = 'web' AND status = 'active'`,
      [ref('slot')],
    );
    expect(keys).toEqual([]);
    // Each finding opened once, with its event through the outbox.
    const { rows: events } = await env.pool.query<{ kind: string }>(
      `SELECT payload->>'kind' AS kind FROM event_outbox WHERE type = 'drift.finding_opened'
        AND payload->>'kind' LIKE 'plan\\_%' ORDER BY 1`,
    );
    expect(events.map((e) => e.kind)).toEqual([
      'plan_policy_differs',
      'plan_schedule_differs',
      'plan_schedule_differs',
      'plan_slot_missing',
    ]);

    // The operator's listing shows them with the tenant.
    const listed = await runCli(['drift', 'list', '--open', '--tenant', ref('policy')], env.cliEnv);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('plan_policy_differs');
    expect(listed.stdout).toContain(ref('policy'));
  });

  it('a tenant put back as its plan says is resolved by the next check', async () => {
    await upsertFundingPolicy(env.pool, {
      externalRef: ref('policy'),
      belowMicroUsd: POLICY.below,
      toMicroUsd: POLICY.to,
      maxPerDayMicroUsd: POLICY.maxPerDay,
      maxPerMonthMicroUsd: null,
      updatedBy: 'someone-by-hand',
    });
    await env.client.schedule
      .getHandle(rotationScheduleId(ref('sched'), 'web'))
      .update((previous) => ({ ...previous, spec: { intervals: [{ every: '90d' }] } }));
    const result = await check(['--tenant', ref('policy')]);
    expect(planFindings(result.findings, 'policy')).toEqual([]);
    const again = await check(['--tenant', ref('sched')]);
    expect(planFindings(again.findings, 'sched')).toEqual([
      ['plan_schedule_differs', rotationScheduleId(ref('sched'), 'default')],
    ]);
    const { rows } = await env.pool.query(
      `SELECT kind, subject, resolution FROM drift_findings WHERE status = 'resolved' AND kind LIKE 'plan\\_%'
        ORDER BY subject`,
    );
    expect(rows).toEqual([
      { kind: 'plan_policy_differs', subject: ref('policy'), resolution: 'not_seen' },
      { kind: 'plan_schedule_differs', subject: rotationScheduleId(ref('sched'), 'web'), resolution: 'not_seen' },
    ]);
  });
});
