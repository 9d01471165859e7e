/**
 * Plans as their users use them: `tenantctl plans …` as a child process against a gateway listening on
 * loopback, and the same routes over HTTP as a signup backend or a dashboard would call them. Versions
 * are made whole and never changed; a bad value is one error naming its field and writes nothing; only an
 * admin may write; who made a version is the bearer token's identity, in the row and in the audit log.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePlan } from '../../src/db/plans-store.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { generateMasterKey } from '../../src/secrets/master-keys.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { createTestContext, type TestContext } from '../harness/context.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { callAs, HARNESS_OPERATOR, startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

const STARTER = {
  initialFundingMicroUsd: '5000000',
  keySlots: ['default'],
  rotation: { interval: '90d', quietPeriod: '1h', overlapWindow: '2h' },
  autoTopUp: { below: '1000000', to: '5000000', maxPerDay: '20000000' },
  resumeBalanceFloorMicroUsd: '500000',
  closeDelay: '30d',
};
const STARTER_V2 = { ...STARTER, keySlots: ['default', 'ci'], rotation: { ...STARTER.rotation, interval: '30d' } };

// Three slots with default: one more than PLATFORM_TENANT_KEY_LIMIT's default (3) leaves room for.
const WIDE = { ...STARTER, keySlots: ['default', 'web', 'api'] };
const WIDE_RULE =
  "keySlots: a plan may have at most 2 slots with default (PLATFORM_TENANT_KEY_LIMIT 3, one key kept free for a rotation's new key), this one has 3";

const viewer = generateOperator('plan-viewer', 'viewer');
const operator = generateOperator('plan-operator', 'operator');

describe('plans', () => {
  let ctx: TestContext;
  let gateway: OperatorGateway;
  let dir: string;
  const cli = (args: string[]) => runCli(['plans', ...args], gateway.cliEnv);
  const counts = async () => {
    const { rows } = await ctx.pool.query<{ plans: number; audit: number }>(
      `SELECT (SELECT count(*)::int FROM plans) AS plans, (SELECT count(*)::int FROM audit_log) AS audit`,
    );
    return rows[0]!;
  };

  beforeAll(async () => {
    ctx = await createTestContext('plans');
    gateway = await startOperatorGateway(
      { ...ctx, secretsKeys: generateMasterKey('tplans') },
      { entries: [viewer.entry, operator.entry] },
    );
    dir = mkdtempSync(join(tmpdir(), 'plans-'));
  });
  afterAll(async () => {
    await gateway?.close();
    await ctx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates, updates, shows and lists plans with tenantctl, each version whole and kept', async () => {
    const file = join(dir, 'starter.json');
    writeFileSync(file, JSON.stringify(STARTER));
    const created = await cli(['create', 'starter', '--file', file, '--reason', 'the entry tier']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toBe('created plan starter version 1');

    const updated = await cli(['update', 'starter', '--json', JSON.stringify(STARTER_V2), '--expect-version', '1']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout.trim()).toBe('updated plan starter: version 2');

    const latest = await cli(['show', 'starter', '--json']);
    expect(latest.code, latest.stderr).toBe(0);
    expect(JSON.parse(latest.stdout)).toMatchObject({
      name: 'starter',
      version: 2,
      latestVersion: 2,
      plan: STARTER_V2,
      createdBy: HARNESS_OPERATOR.name,
      reason: null,
    });
    const first = await cli(['show', 'starter', '--version', '1', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      version: 1,
      latestVersion: 2,
      plan: STARTER,
      reason: 'the entry tier',
    });
    const human = await cli(['show', 'starter', '--version', '1']);
    expect(human.stdout).toContain('plan starter version 1 (latest is 2)');

    const pro = await cli(['create', 'pro', '--json', JSON.stringify({ keySlots: ['prod'] })]);
    expect(pro.code, pro.stderr).toBe(0);
    const list = await cli(['list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject([
      { name: 'pro', latestVersion: 1, updatedBy: HARNESS_OPERATOR.name },
      { name: 'starter', latestVersion: 2, updatedBy: HARNESS_OPERATOR.name },
    ]);
    expect((await cli(['list'])).stdout).toMatch(/^starter {2}version 2 {2}created /m);

    // The records: two versions of starter, each audited under the token's identity.
    const { rows } = await ctx.pool.query(
      `SELECT version, created_by AS "createdBy", body FROM plans WHERE name = 'starter' ORDER BY version`,
    );
    expect(rows).toEqual([
      { version: 1, createdBy: 'ops', body: STARTER },
      { version: 2, createdBy: 'ops', body: STARTER_V2 },
    ]);
    const { rows: audit } = await ctx.pool.query(
      `SELECT actor, action, subject, details->>'version' AS version FROM audit_log WHERE subject = 'plan:starter' ORDER BY id`,
    );
    expect(audit).toEqual([
      { actor: 'operator:ops', action: 'plan.created', subject: 'plan:starter', version: '1' },
      { actor: 'operator:ops', action: 'plan.updated', subject: 'plan:starter', version: '2' },
    ]);
  });

  it('refuses a stale update, a second create and an unknown plan or version, writing nothing', async () => {
    const before = await counts();
    const stale = await cli(['update', 'starter', '--json', JSON.stringify(STARTER), '--expect-version', '1']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/plan starter is at version 2, not 1/);
    const again = await cli(['create', 'starter', '--json', JSON.stringify(STARTER)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/a plan named starter exists already/);
    const nowhere = await cli(['update', 'nowhere', '--json', JSON.stringify(STARTER)]);
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/no plan named nowhere/);
    const noVersion = await cli(['show', 'starter', '--version', '9']);
    expect(noVersion.code).toBe(1);
    expect(noVersion.stderr).toMatch(/no version 9 of a plan named starter/);
    expect(await counts()).toEqual(before);
  });

  it('names the field of a bad value, exits 2 and writes nothing', async () => {
    const before = await counts();
    const cases: Array<[string[], RegExp]> = [
      [
        ['create', 'neg', '--json', JSON.stringify({ ...STARTER, initialFundingMicroUsd: '-5' })],
        /^error: initialFundingMicroUsd: must be a string of a positive whole number/,
      ],
      [
        ['create', 'slots', '--json', JSON.stringify({ ...STARTER, keySlots: ['default', 'Prod Web'] })],
        /^error: keySlots\.1: must be 1-32 characters/,
      ],
      [
        ['create', 'rot', '--json', JSON.stringify({ ...STARTER, rotation: { interval: 'quarterly' } })],
        /^error: rotation\.interval: must be a duration like 12h or 30d/,
      ],
      [
        ['create', 'cap', '--json', JSON.stringify({ ...STARTER, autoTopUp: { below: '9', to: '5', maxPerDay: '9' } })],
        /^error: autoTopUp\.below: must be less than to$/,
      ],
      [
        ['create', 'close', '--json', JSON.stringify({ ...STARTER, closeDelay: '2y' })],
        /^error: closeDelay: must be 0 \(close at once\)/,
      ],
      [
        ['create', 'who', '--json', JSON.stringify({ ...STARTER, createdBy: 'alice' })],
        /^error: createdBy: is not a known field$/,
      ],
      [
        ['create', 'big', '--json', JSON.stringify({ ...STARTER, initialFundingMicroUsd: '99000000000' })],
        /^error: initialFundingMicroUsd: must be at most 10000000000 micro-USD \(TRANSFER_MAX_MICRO_USD\)$/,
      ],
      [['create', 'bad/name', '--json', JSON.stringify(STARTER)], /^error: name: must be 1-64 characters/],
      [['create', 'nobody', '--json', '{"keySlots": ['], /^error: --json: is not valid JSON$/],
      [['create', 'nobody', '--json', '[]'], /^error: --json: must be a JSON object/],
      [['create', 'nobody'], /^error: --file or --json: give exactly one of them/],
      [
        ['create', 'nobody', '--file', join(dir, 'missing.json')],
        /^error: --file: cannot read .*missing\.json \(ENOENT\)$/,
      ],
      [
        ['update', 'starter', '--json', JSON.stringify(STARTER), '--expect-version', 'two'],
        /^error: --expect-version: must be a whole number from 1/,
      ],
      [['show', 'starter', '--version', '0'], /^error: --version: must be a whole number from 1/],
    ];
    for (const [args, problem] of cases) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(result.stderr.trim(), args.join(' ')).toMatch(problem);
    }
    expect(await counts()).toEqual(before);
  });

  it('tenantctl plans create --file refuses more slots than the key limit leaves room for, writing nothing', async () => {
    const file = join(dir, 'wide.json');
    writeFileSync(file, JSON.stringify(WIDE));
    const before = await counts();
    for (const args of [
      ['create', 'wide', '--file', file],
      ['update', 'starter', '--file', file],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr.trim(), args.join(' ')).toBe(`error: ${WIDE_RULE}`);
    }
    expect(await counts()).toEqual(before);
    const { rows } = await ctx.pool.query(`SELECT version FROM plans WHERE name = 'wide'`);
    expect(rows).toEqual([]);
  });

  it('over HTTP: more slots than the key limit leaves room for is 400 naming keySlots, and nothing is written', async () => {
    const before = await counts();
    const created = await callAs(gateway.url, 'POST', '/v1/plans', HARNESS_OPERATOR.token, { ...WIDE, name: 'wide' });
    expect(created.status, JSON.stringify(created.json)).toBe(400);
    expect(created.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['keySlots'] });
    expect(created.json.error.message).toBe(`invalid input: ${WIDE_RULE}`);
    const updated = await callAs(gateway.url, 'POST', '/v1/plans/starter/versions', HARNESS_OPERATOR.token, WIDE);
    expect(updated.status, JSON.stringify(updated.json)).toBe(400);
    expect(updated.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['keySlots'] });
    expect(await counts()).toEqual(before);
    const { rows: plans } = await ctx.pool.query(`SELECT version FROM plans WHERE name = 'wide'`);
    expect(plans).toEqual([]);
    const { rows: audit } = await ctx.pool.query(
      `SELECT id FROM audit_log WHERE subject = 'plan:wide' OR (subject = 'plan:starter' AND details->>'version' = '3')`,
    );
    expect(audit).toEqual([]);
  });

  it('a version made under a higher limit is refused where it is carried out once the limit is lower', async () => {
    // A gateway whose PLATFORM_TENANT_KEY_LIMIT is 4 makes it; this file's gateway keeps the default, 3.
    const wider = await startOperatorGateway(
      { ...ctx, secretsKeys: generateMasterKey('tplans4') },
      {
        gateway: { tenantKeyLimit: 4 },
      },
    );
    try {
      const made = await callAs(wider.url, 'POST', '/v1/plans', HARNESS_OPERATOR.token, { ...WIDE, name: 'wide4' });
      expect(made.status, JSON.stringify(made.json)).toBe(201);
    } finally {
      await wider.close();
    }
    const carried = `plan: wide4@1's ${WIDE_RULE}`;
    const before = await counts();
    const onboard = await callAs(gateway.url, 'POST', '/v1/tenants', HARNESS_OPERATOR.token, {
      externalRef: 'wide-tenant',
      name: 'Wide',
      plan: 'wide4',
    });
    expect(onboard.status, JSON.stringify(onboard.json)).toBe(400);
    expect(onboard.json.error).toMatchObject({
      code: 'INVALID_INPUT',
      fields: ['plan'],
      message: `invalid input: ${carried}`,
    });
    expect(await workflowExists(ctx.client, 'onboard:wide-tenant')).toBe(false);
    const rollout = await callAs(gateway.url, 'POST', '/v1/plans/wide4/rollouts', HARNESS_OPERATOR.token, {});
    expect(rollout.status, JSON.stringify(rollout.json)).toBe(400);
    expect(rollout.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['plan'] });
    expect(await workflowExists(ctx.client, 'plan-rollout:wide4@1')).toBe(false);
    const assign = await callAs(gateway.url, 'POST', '/v1/tenants/wide-tenant/plan', HARNESS_OPERATOR.token, {
      plan: 'wide4@1',
    });
    expect(assign.status, JSON.stringify(assign.json)).toBe(400);
    expect(assign.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['plan'] });
    expect(await workflowExists(ctx.client, 'plan:wide-tenant')).toBe(false);
    expect(await counts()).toEqual(before);
    const { rows: tenants } = await ctx.pool.query(`SELECT 1 FROM tenants WHERE external_ref = 'wide-tenant'`);
    expect(tenants).toEqual([]);
    // The worker's onboarding step resolves the plan the same way, under its own setting.
    await expect(resolvePlan(ctx.pool, 'wide4', { tenantKeyLimit: 3 })).rejects.toThrow(InvalidInputError);
    await expect(resolvePlan(ctx.pool, 'wide4', { tenantKeyLimit: 3 })).rejects.toMatchObject({ problems: [carried] });
    await expect(resolvePlan(ctx.pool, 'wide4', { tenantKeyLimit: 4 })).resolves.toMatchObject({
      name: 'wide4',
      version: 1,
    });
  });

  it('over HTTP: reads for viewers, writes for admins only, the actor from the token and never from the body', async () => {
    const before = await counts();
    for (const [who, token] of [
      ['viewer', viewer.token],
      ['operator', operator.token],
    ] as const) {
      const refused = await callAs(gateway.url, 'POST', '/v1/plans', token, { ...STARTER, name: `by-${who}` });
      expect(refused.status, who).toBe(403);
      expect(refused.json).toMatchObject({ error: { code: 'FORBIDDEN' } });
      const update = await callAs(gateway.url, 'POST', '/v1/plans/starter/versions', token, STARTER);
      expect(update.status, who).toBe(403);
      const read = await callAs(gateway.url, 'GET', '/v1/plans/starter?version=1', token);
      expect(read.status, who).toBe(200);
      expect(read.json.data).toMatchObject({ name: 'starter', version: 1, plan: STARTER });
      expect((await callAs(gateway.url, 'GET', '/v1/plans', token)).status, who).toBe(200);
    }
    const named = await callAs(gateway.url, 'POST', '/v1/plans/starter/versions', HARNESS_OPERATOR.token, {
      ...STARTER,
      createdBy: 'alice',
    });
    expect(named.status).toBe(400);
    expect(named.json).toMatchObject({ error: { code: 'INVALID_INPUT', fields: ['createdBy'] } });
    const bad = await callAs(gateway.url, 'POST', '/v1/plans', HARNESS_OPERATOR.token, {
      name: 'bad',
      keySlots: ['default', 'default'],
      autoTopUp: { below: '1', to: '2', maxPerDay: '0' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: { code: 'INVALID_INPUT', fields: ['keySlots', 'autoTopUp.maxPerDay'] } });
    const missing = await callAs(gateway.url, 'GET', '/v1/plans/starter?version=7', viewer.token);
    expect(missing).toMatchObject({ status: 404, json: { error: { code: 'PLAN_NOT_FOUND' } } });
    expect(await counts()).toEqual(before);

    const made = await callAs(gateway.url, 'POST', '/v1/plans', HARNESS_OPERATOR.token, {
      ...STARTER,
      name: 'enterprise',
      reason: 'big customers',
    });
    expect(made.status).toBe(201);
    expect(made.json.data).toMatchObject({ name: 'enterprise', version: 1, createdBy: 'ops', reason: 'big customers' });
    expect(await counts()).toEqual({ plans: before.plans + 1, audit: before.audit + 1 });
  });

  it('makes each version once when updates race, and the database refuses to change or remove one', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        callAs(gateway.url, 'POST', '/v1/plans/pro/versions', HARNESS_OPERATOR.token, {
          keySlots: [`extra-${i}`],
        }),
      ),
    );
    for (const answer of answers) expect([201, 409]).toContain(answer.status);
    const made = answers.filter((answer) => answer.status === 201).map((answer) => answer.json.data.version as number);
    expect(made.length).toBeGreaterThanOrEqual(1);
    for (const answer of answers.filter((a) => a.status === 409))
      expect(answer.json).toMatchObject({ error: { code: 'PLAN_VERSION_CONFLICT' } });
    const { rows } = await ctx.pool.query<{ version: number }>(
      `SELECT version FROM plans WHERE name = 'pro' ORDER BY version`,
    );
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: made.length + 1 }, (_, i) => i + 1));
    expect([...made].sort((a, b) => a - b)).toEqual(rows.slice(1).map((r) => r.version));

    await expect(ctx.pool.query(`UPDATE plans SET body = '{}'::jsonb WHERE name = 'pro'`)).rejects.toThrow(
      /plan versions are immutable \(UPDATE refused\)/,
    );
    await expect(ctx.pool.query(`DELETE FROM plans WHERE name = 'pro'`)).rejects.toThrow(
      /plan versions are immutable \(DELETE refused\)/,
    );
    // Nothing sets a tenant's plan yet, but a tenant may only ever name a version that exists.
    await expect(
      ctx.pool.query(`INSERT INTO tenants (external_ref, name, status, create_idempotency_key, plan_name, plan_version)
                      VALUES ('plan-t', 'T', 'active', 'plan-t-key', 'pro', 99)`),
    ).rejects.toThrow(/tenants_plan_exists/);
  });
});
