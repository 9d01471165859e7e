/**
 * Plan convergence (issue 33, part 3) as its users use it: tenantctl `plans rollout|rollout-status|pause|resume|
 * assign` as child processes against a gateway listening on loopback, and the same routes over HTTP. Four
 * tenants are onboarded on plan `pro` version 1; `plans update` makes version 2 with a new slot and an upgrade
 * funding. The dry run lists the new slot per tenant and writes nothing; `plans rollout --wait` converges every
 * tenant (each new key issued once, the funding sent once) and `tenantctl status` shows the version and the key.
 * Bad input, a viewer, a pause of a rollout that is not running: one clear answer and nothing started. A rollout
 * paused in the middle over HTTP is followed by `--wait`, which says when the pause starts and ends. `plans assign`
 * moves one tenant onto another plan. (The 200-tenant rollout and the workflow's own decisions are tested
 * elsewhere: test/integration/plan-rollout*.test.ts, test/workflows/.)
 */
import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotationScheduleId } from '../../src/domain/ids.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { DEFAULT_PLATFORM_KEY, DEFAULT_SEED } from '../../src/sim/index.js';
import { runCli } from '../harness/cli.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { clearFaults, createOrchestratorEnv, setFaults, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs, HARNESS_OPERATOR, startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

const PRO_V1 = {
  keySlots: ['default', 'web'],
  rotation: { interval: '90d', quietPeriod: '1h', overlapWindow: '2h' },
  autoTopUp: { below: '1000000', to: '3000000', maxPerDay: '10000000' },
};
const PRO_V2 = { ...PRO_V1, keySlots: ['default', 'web', 'ci'], upgradeFundingMicroUsd: '2000000' };
// Three slots with default: the worker, this file's gateway and the simulator allow a tenant 4 active keys
// (PLATFORM_TENANT_KEY_LIMIT 4, one kept free for a rotation); v3 and team keep v2's slots.
const PRO_V3 = { ...PRO_V2, rotation: { ...PRO_V1.rotation, interval: '60d' } };
const TEAM = {
  ...PRO_V3,
  upgradeFundingMicroUsd: '1000000',
  rotation: { ...PRO_V1.rotation, interval: '30d' },
  autoTopUp: { below: '2000000', to: '4000000', maxPerDay: '10000000' },
};
const TENANTS = ['roll-a', 'roll-b', 'roll-c', 'roll-d'];
const ALL_SLOTS = TEAM.keySlots;

const viewer = generateOperator('roll-viewer', 'viewer');

describe('plan rollout surfaces', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  const url = () => gateway.url;
  const http = (method: string, path: string, body?: unknown, token = HARNESS_OPERATOR.token) =>
    callAs(url(), method, path, token, body);
  const cli = (args: string[], timeoutMs = 120_000) => runCli(args, gateway.cliEnv, timeoutMs);

  /** Every tenant's plan version and active key slots in our records; the simulator's key creates per tenant. */
  async function records() {
    const { rows } = await env.pool.query<{ ref: string; plan: string; slots: string[] }>(
      `SELECT t.external_ref AS ref, t.plan_name || '@' || t.plan_version AS plan,
              array(SELECT k.slot FROM tenant_keys k WHERE k.external_ref = t.external_ref AND k.status = 'active'
                    ORDER BY k.slot) AS slots
         FROM tenants t WHERE t.external_ref = ANY($1::text[]) ORDER BY t.external_ref`,
      [TENANTS],
    );
    const state = env.sim.state();
    const platform = TENANTS.map((ref) => {
      const subaccount = state.subaccounts.find((s) => s.externalRef === ref)!;
      return {
        ref,
        keys: state.apiKeys.filter((k) => k.subaccountId === subaccount.id).length,
        transfers: state.transfers.filter((t) => t.subaccountId === subaccount.id).map((t) => t.amountMicroUsd),
      };
    });
    return { tenants: rows, platform };
  }

  beforeAll(async () => {
    env = await createOrchestratorEnv(
      'plan-rollout-surfaces',
      { seed: { ...DEFAULT_SEED, tenantActiveKeyLimit: 4 } },
      { platformTenantKeyLimit: 4 },
    );
    await env.startOrchestratorWorker();
    // A gateway of this file's own that also knows a viewer (the env's knows only the harness admin).
    const platform = createPlatformClient({
      baseUrl: env.sim.apiBase,
      platformKey: DEFAULT_PLATFORM_KEY,
      timeoutMs: 2_000,
    });
    gateway = await startOperatorGateway(env, {
      entries: [viewer.entry],
      gateway: { preflightPlatform: platform, tenantKeyLimit: 4 },
    });
    const created = await cli(['plans', 'create', 'pro', '--json', JSON.stringify(PRO_V1)]);
    expect(created.code, created.stderr).toBe(0);
    const onboarded = await Promise.all(
      TENANTS.map((ref) => http('POST', '/v1/tenants', { externalRef: ref, name: `Tenant ${ref}`, plan: 'pro' })),
    );
    for (const answer of onboarded) expect(answer.status, JSON.stringify(answer.json)).toBe(202);
    await Promise.all(
      onboarded.map((answer) => env.client.workflow.getHandle(answer.json.data.workflowId as string).result()),
    );
    const updated = await cli(['plans', 'update', 'pro', '--json', JSON.stringify(PRO_V2), '--reason', 'add ci']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout.trim()).toBe('updated plan pro: version 2');
  }, 300_000);

  afterAll(async () => {
    for (const ref of TENANTS)
      for (const slot of ALL_SLOTS)
        await env?.client.schedule
          .getHandle(rotationScheduleId(ref, slot))
          .delete()
          .catch((error: unknown) => {
            if (!(error instanceof ScheduleNotFoundError)) throw error;
          });
    await gateway?.close();
    await env?.close();
  });

  it('the dry run prints, per tenant, the slot version 2 adds and the funding, and does nothing', async () => {
    const before = await records();
    const dry = await cli(['plans', 'rollout', 'pro', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    const lines = dry.stdout.trim().split('\n');
    expect(lines).toHaveLength(TENANTS.length + 1);
    for (const ref of TENANTS) {
      const line = lines.find((l) => l.startsWith(`${ref} `));
      expect(line, dry.stdout).toBeDefined();
      expect(line).toContain('(pro@1 → pro@2)');
      expect(line).toContain('add slots ci');
      expect(line).toContain('fund 2000000 micro-USD');
      expect(line).not.toContain('retire');
    }
    expect(lines.at(-1)).toBe('dry run: 4 tenants of pro to move onto pro@2; nothing was done');

    // The same over HTTP, a page at a time: two pages of two, the second ending the list.
    const first = await http('GET', '/v1/plans/pro/rollout-preview?limit=2', undefined, viewer.token);
    expect(first.status, JSON.stringify(first.json)).toBe(200);
    expect(first.json.data.tenants.map((t: { externalRef: string }) => t.externalRef)).toEqual(TENANTS.slice(0, 2));
    expect(first.json.data.tenants[0].changes).toMatchObject({ slotsAdded: ['ci'], slotsRetired: [] });
    const second = await http('GET', `/v1/plans/pro/rollout-preview?limit=2&after=${first.json.data.next}`);
    expect(second.json.data.tenants.map((t: { externalRef: string }) => t.externalRef)).toEqual(TENANTS.slice(2));
    const last = await http('GET', `/v1/plans/pro/rollout-preview?limit=2&after=${TENANTS[3]}`);
    expect(last.json.data).toMatchObject({ tenants: [], next: null });

    expect(await records()).toEqual(before);
    expect(await workflowExists(env.client, 'plan-rollout:pro@2')).toBe(false);
  });

  it('a dry run of a version over the key limit is refused as its start is, over HTTP and by tenantctl', async () => {
    // PLATFORM_TENANT_KEY_LIMIT lowered to 3 on a gateway of its own: pro@2's three slots (with default) leave no
    // key free for a rotation, so the rollout's start refuses it; its dry run must not list tenants to move.
    const lowered = await startOperatorGateway(env, { entries: [viewer.entry], gateway: { tenantKeyLimit: 3 } });
    const rule =
      "plan: pro@2's keySlots: a plan may have at most 2 slots with default (PLATFORM_TENANT_KEY_LIMIT 3, " +
      "one key kept free for a rotation's new key), this one has 3";
    try {
      const before = await records();
      const start = await callAs(lowered.url, 'POST', '/v1/plans/pro/rollouts', HARNESS_OPERATOR.token, {});
      const preview = await callAs(lowered.url, 'GET', '/v1/plans/pro/rollout-preview', HARNESS_OPERATOR.token);
      const pinned = await callAs(lowered.url, 'GET', '/v1/plans/pro/rollout-preview?version=2', viewer.token);
      for (const [what, answer] of [
        ['start', start],
        ['dry run', preview],
        ['dry run of version 2', pinned],
      ] as const) {
        expect(answer.status, `${what}: ${JSON.stringify(answer.json)}`).toBe(400);
        expect(answer.json.error, what).toMatchObject({
          code: 'INVALID_INPUT',
          fields: ['plan'],
          message: `invalid input: ${rule}`,
        });
      }
      // Version 1 (two slots with default) fits: its dry run answers.
      const fits = await callAs(lowered.url, 'GET', '/v1/plans/pro/rollout-preview?version=1', viewer.token);
      expect(fits.status, JSON.stringify(fits.json)).toBe(200);

      const lowEnv = { ...lowered.cliEnv };
      const dry = await runCli(['plans', 'rollout', 'pro', '--dry-run'], lowEnv);
      const started = await runCli(['plans', 'rollout', 'pro'], lowEnv);
      for (const [what, result] of [
        ['--dry-run', dry],
        ['start', started],
      ] as const) {
        expect(result.code, `${what}: ${result.stdout}${result.stderr}`).toBe(2);
        expect(result.stderr.trim(), what).toBe(`error: ${rule}`);
        expect(result.stdout, what).toBe('');
      }
      expect(await records()).toEqual(before);
      expect(await workflowExists(env.client, 'plan-rollout:pro@2')).toBe(false);
    } finally {
      await lowered.close();
    }
  });

  it('the dry run refuses a query field it does not know, as the start refuses a body field', async () => {
    const typo = await http('GET', '/v1/plans/pro/rollout-preview?versoin=1', undefined, viewer.token);
    expect(typo.status, JSON.stringify(typo.json)).toBe(400);
    expect(typo.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['versoin'] });
    const badFrom = await http('GET', '/v1/plans/pro/rollout-preview?from=%21bad', undefined, viewer.token);
    const badStartFrom = await http('POST', '/v1/plans/pro/rollouts', { from: '!bad' });
    for (const answer of [badFrom, badStartFrom]) {
      expect(answer.status, JSON.stringify(answer.json)).toBe(400);
      expect(answer.json.error.fields).toEqual(['from']);
    }
    expect(badFrom.json.error.message).toBe(badStartFrom.json.error.message);
    const cliFrom = await cli(['plans', 'rollout', 'pro', '--dry-run', '--from', '!bad']);
    expect(cliFrom.code, cliFrom.stderr).toBe(2);
    expect(cliFrom.stderr).toMatch(/^error: --from: /);
  });

  it('refuses bad input, an unknown plan or version and a viewer, with nothing started', async () => {
    const refusals: Array<[string, string, unknown, string | undefined, number, string, string[] | undefined]> = [
      ['a viewer', '/v1/plans/pro/rollouts', {}, viewer.token, 403, 'FORBIDDEN', undefined],
      ['an unknown plan', '/v1/plans/gold/rollouts', {}, undefined, 404, 'PLAN_NOT_FOUND', undefined],
      [
        'a version that does not exist',
        '/v1/plans/pro/rollouts',
        { version: 9 },
        undefined,
        404,
        'PLAN_NOT_FOUND',
        undefined,
      ],
      ['concurrency 0', '/v1/plans/pro/rollouts', { concurrency: 0 }, undefined, 400, 'INVALID_INPUT', ['concurrency']],
      [
        'an actor in the body',
        '/v1/plans/pro/rollouts',
        { requestedBy: 'mallory' },
        undefined,
        400,
        'INVALID_INPUT',
        ['requestedBy'],
      ],
      [
        'a caller-set page cursor',
        '/v1/plans/pro/rollouts',
        { after: 'roll-b' },
        undefined,
        400,
        'INVALID_INPUT',
        ['after'],
      ],
    ];
    for (const [what, path, body, token, status, code, fields] of refusals) {
      const answer = await http('POST', path, body, token);
      expect(answer.status, `${what}: ${JSON.stringify(answer.json)}`).toBe(status);
      expect(answer.json.error.code, what).toBe(code);
      if (fields) expect(answer.json.error.fields, what).toEqual(fields);
    }
    const concurrency = await http('POST', '/v1/plans/pro/rollouts', { concurrency: 0 });
    expect(concurrency.json.error.message).toContain('concurrency:');

    // tenantctl says the same: the flag named, exit 2; an unknown version exit 1.
    const zero = await cli(['plans', 'rollout', 'pro', '--concurrency', '0']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toContain('--concurrency:');
    const nine = await cli(['plans', 'rollout', 'pro', '--version', '9']);
    expect(nine.code).toBe(1);
    expect(nine.stderr).toContain('no version 9 of a plan named pro');
    // A quiet-gate option: the route's rule, the flag named.
    const quiet = await http('POST', '/v1/plans/pro/rollouts', { options: { quietPeriod: 'soon' } });
    expect(quiet.status, JSON.stringify(quiet.json)).toBe(400);
    expect(quiet.json.error.fields).toEqual(['options.quietPeriod']);
    const rule = (quiet.json.error.message as string).replace('invalid input: options.quietPeriod: ', '');
    const quietFlag = await cli(['plans', 'rollout', 'pro', '--quiet-period', 'soon']);
    expect(quietFlag.code, quietFlag.stderr).toBe(2);
    expect(quietFlag.stderr.trim()).toBe(`error: --quiet-period: ${rule}`);

    // Nothing to read or decide for a rollout never started.
    const none = await http('GET', '/v1/plans/pro/rollouts/2', undefined, viewer.token);
    expect(none.status).toBe(404);
    expect(none.json.error.code).toBe('ROLLOUT_NOT_FOUND');
    const pause = await http('POST', '/v1/plans/pro/rollouts/2/pause', { reason: 'nothing runs' });
    expect(pause.status).toBe(404);
    expect(pause.json.error.code).toBe('RUN_NOT_FOUND');
    const noConvergence = await http('GET', '/v1/tenants/roll-a/plan', undefined, viewer.token);
    expect(noConvergence.status).toBe(404);
    expect(noConvergence.json.error.code).toBe('RUN_NOT_FOUND');
    const status = await cli(['plans', 'rollout-status', 'pro@2']);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain('no rollout of plan pro@2 was started');
    for (const version of [2, 9])
      expect(await workflowExists(env.client, `plan-rollout:pro@${version}`), `pro@${version}`).toBe(false);
    expect(await workflowExists(env.client, 'plan-rollout:gold@1')).toBe(false);
    expect((await records()).tenants.map((t) => t.plan)).toEqual(TENANTS.map(() => 'pro@1'));
  });

  it('plans rollout --wait converges every tenant: plan v2, the new key once, the funding once', async () => {
    const before = await records();
    // The quiet gate's timings, which each tenant's convergence revokes a retired slot's key by.
    const gate = { quietPeriod: '5m', pollInterval: '30s', quietDeadline: '2h', overlapWindow: '20m' };
    const rollout = await cli(
      [
        'plans',
        'rollout',
        'pro',
        '--wait',
        '--reason',
        'ci keys for everyone',
        '--quiet-period',
        gate.quietPeriod,
        '--poll-interval',
        gate.pollInterval,
        '--quiet-deadline',
        gate.quietDeadline,
        '--overlap-window',
        gate.overlapWindow,
      ],
      180_000,
    );
    expect(rollout.code, `${rollout.stdout}\n${rollout.stderr}`).toBe(0);
    expect(rollout.stderr).toContain('started rollout plan-rollout:pro@2');
    expect(rollout.stdout).toContain('rollout of plan pro@2 to the tenants of pro: COMPLETED, stage finished');
    expect(rollout.stdout).toContain('4 started, 4 converged, 0 unchanged, 0 held, 0 skipped, 0 failed');

    const after = await records();
    expect(after.tenants).toEqual(TENANTS.map((ref) => ({ ref, plan: 'pro@2', slots: ['ci', 'default', 'web'] })));
    for (const [i, tenant] of after.platform.entries()) {
      expect(tenant.keys, tenant.ref).toBe(before.platform[i]!.keys + 1);
      expect(tenant.transfers, tenant.ref).toEqual([...before.platform[i]!.transfers, '2000000']);
    }
    for (const ref of TENANTS) {
      const status = await cli(['status', ref]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(', plan pro@2');
      expect(status.stdout).toMatch(/^key ci g1: active \S+/m);
    }
    // The flags reached the run and, through it, each tenant's convergence.
    const inputOf = async (workflowId: string) => {
      const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
      const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
      return JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString('utf8')) as Record<string, unknown>;
    };
    expect(await inputOf('plan-rollout:pro@2')).toMatchObject({ reason: 'ci keys for everyone', options: gate });
    for (const ref of TENANTS) expect(await inputOf(`plan:${ref}`), ref).toMatchObject({ options: gate });
    // Its progress stays readable, and the audited actor is the token's name.
    const view = await http('GET', '/v1/plans/pro/rollouts/2', undefined, viewer.token);
    expect(view.json.data).toMatchObject({
      runStatus: 'COMPLETED',
      status: { stage: 'finished', totals: { converged: 4, failed: 0 } },
    });
    const { rows: audited } = await env.pool.query<{ ref: string; by: string }>(
      `SELECT external_ref AS ref, details->>'requestedBy' AS by FROM audit_log
        WHERE action = 'tenant.plan_changed' AND details->'to'->>'version' = '2' ORDER BY external_ref`,
    );
    expect(audited).toEqual(TENANTS.map((ref) => ({ ref, by: HARNESS_OPERATOR.name })));
    const { rows: events } = await env.pool.query<{ payload: unknown }>(
      `SELECT payload FROM event_outbox WHERE type = 'tenant.plan_changed' AND payload->'to'->>'version' = '2'
        ORDER BY external_ref`,
    );
    expect(events.map((e) => e.payload)).toEqual(
      TENANTS.map((externalRef) => ({
        externalRef,
        from: { name: 'pro', version: 1 },
        to: { name: 'pro', version: 2 },
      })),
    );

    // Again: every tenant is on the version, so there is nothing to list and nothing to do.
    const again = await cli(['plans', 'rollout', 'pro', '--dry-run']);
    expect(again.stdout.trim()).toBe('dry run: 0 tenants of pro to move onto pro@2; nothing was done');
  });

  it('a rollout paused in the middle: refusals name why, --wait says when the pause starts and ends', async () => {
    const updated = await cli(['plans', 'update', 'pro', '--json', JSON.stringify(PRO_V3)]);
    expect(updated.code, updated.stderr).toBe(0);
    // Each upgrade funding's transfer takes 1.5 s and one tenant converges at a time: the rollout runs for seconds.
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'delay', delayMs: 1500 },
    ]);
    try {
      const following = cli(['plans', 'rollout', 'pro', '--wait', '--concurrency', '1'], 180_000);
      let view = await http('GET', '/v1/plans/pro/rollouts/3');
      for (let i = 0; view.status === 404 && i < 100; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        view = await http('GET', '/v1/plans/pro/rollouts/3');
      }
      expect(view.json.data.runStatus).toBe('RUNNING');

      // Paused at once: the first tenant is still converging.
      const pause = await http('POST', '/v1/plans/pro/rollouts/3/pause', { reason: 'checking the first tenants' });
      expect(pause.status, JSON.stringify(pause.json)).toBe(200);
      expect(pause.json.data).toMatchObject({ decision: 'pause', stage: 'paused' });
      const twice = await cli(['plans', 'pause', 'pro@3', '--reason', 'once more']);
      expect(twice.code).toBe(1);
      expect(twice.stderr).toContain('the rollout is paused, not running');
      const noReason = await http('POST', '/v1/plans/pro/rollouts/3/resume', {});
      expect(noReason.status).toBe(400);
      expect(noReason.json.error.fields).toEqual(['reason']);
      const byViewer = await http('POST', '/v1/plans/pro/rollouts/3/resume', { reason: 'a look' }, viewer.token);
      expect(byViewer.status).toBe(403);

      const paused = await cli(['plans', 'rollout-status', 'pro@3']);
      expect(paused.code, paused.stderr).toBe(0);
      expect(paused.stdout).toContain('RUNNING, stage paused');
      expect(paused.stdout).toContain(`paused by ${HARNESS_OPERATOR.name} since `);
      expect(paused.stdout).toContain('decisions: resumeRollout');
      // Paused: no tenant is started, the one running finishes.
      let held = (await http('GET', '/v1/plans/pro/rollouts/3')).json.data;
      for (let i = 0; held.status.running > 0 && i < 300; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        held = (await http('GET', '/v1/plans/pro/rollouts/3')).json.data;
      }
      expect(held.status).toMatchObject({ stage: 'paused', running: 0 });
      expect(held.status.totals.started).toBeLessThan(TENANTS.length);
      const startedWhilePaused = held.status.totals.started;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect((await http('GET', '/v1/plans/pro/rollouts/3')).json.data.status.totals.started).toBe(startedWhilePaused);

      const resume = await cli(['plans', 'resume', 'pro@3', '--reason', 'the first tenants look right']);
      expect(resume.code, resume.stderr).toBe(0);
      expect(resume.stdout).toContain('resumed rollout of plan pro@3: ');
      // Running again (at least two tenants to go): a resume is refused, naming why.
      const resumeRunning = await http('POST', '/v1/plans/pro/rollouts/3/resume', { reason: 'it is not paused' });
      expect(resumeRunning.status, JSON.stringify(resumeRunning.json)).toBe(409);
      expect(resumeRunning.json.error.code).toBe('DECISION_NOT_APPLICABLE');
      expect(resumeRunning.json.error.message).toContain('the rollout is running, not paused');
      const done = await following;
      expect(done.code, `${done.stdout}\n${done.stderr}`).toBe(0);
      expect(done.stderr).toMatch(
        /^waiting \(paused\): resumeRollout .*checking the first tenants — decisions: resumeRollout$/m,
      );
      expect(done.stderr).toMatch(/^wait over \(paused\), waited since /m);
      expect(done.stdout).toContain('4 started, 4 converged');
    } finally {
      await clearFaults(env.sim);
    }
    expect((await records()).tenants.map((t) => t.plan)).toEqual(TENANTS.map(() => 'pro@3'));
    const resumeEnded = await http('POST', '/v1/plans/pro/rollouts/3/resume', { reason: 'it has ended' });
    expect(resumeEnded.status).toBe(404);
  });

  it('plans assign moves one tenant onto another plan and waits for it', async () => {
    const created = await cli(['plans', 'create', 'team', '--json', JSON.stringify(TEAM)]);
    expect(created.code, created.stderr).toBe(0);
    const bad = await http('POST', '/v1/tenants/roll-a/plan', { plan: 'team@7' });
    expect(bad.status).toBe(404);
    expect(bad.json.error.code).toBe('PLAN_NOT_FOUND');
    const malformed = await http('POST', '/v1/tenants/roll-a/plan', { plan: 'team@x' });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error.fields).toEqual(['plan']);
    const nobody = await http('POST', '/v1/tenants/nobody/plan', { plan: 'team' });
    expect(nobody.status).toBe(404);
    expect(nobody.json.error.code).toBe('TENANT_NOT_FOUND');
    expect((await http('GET', '/v1/tenants/nobody/plan')).json.error.code).toBe('TENANT_NOT_FOUND');
    const before = (await http('GET', '/v1/tenants/roll-a/plan')).json.data;
    expect(before.result).toMatchObject({ outcome: 'converged', to: { name: 'pro', version: 3 } });
    const { rows: policy } = await env.pool.query(
      `SELECT below_micro_usd::text AS below, to_micro_usd::text AS to FROM funding_policies
        WHERE external_ref = 'roll-a'`,
    );
    expect(policy).toEqual([{ below: '1000000', to: '3000000' }]);

    const assign = await cli(['plans', 'assign', 'roll-a', 'team', '--reason', 'moved to team', '--wait']);
    expect(assign.code, `${assign.stdout}\n${assign.stderr}`).toBe(0);
    expect(assign.stdout).toContain(
      'roll-a: converged (pro@3 → team@1): fund 1000000 micro-USD; ' +
        'set rotation schedules default, web, ci; auto top-up policy set',
    );
    expect(assign.stdout).toMatch(/^ {2}funding plan\.team\.v1: succeeded$/m);
    const view = await http('GET', '/v1/tenants/roll-a/plan', undefined, viewer.token);
    expect(view.json.data.workflowId).toBe('plan:roll-a');
    expect(view.json.data).toMatchObject({
      runStatus: 'COMPLETED',
      result: { outcome: 'converged', to: { name: 'team', version: 1 } },
    });
    const status = await cli(['status', 'roll-a']);
    expect(status.stdout).toContain(', plan team@1');
    const schedule = await env.client.schedule.getHandle(rotationScheduleId('roll-a', 'ci')).describe();
    expect(schedule.spec.intervals?.[0]?.every).toBe(30 * 24 * 3600 * 1000);
    const { rows: moved } = await env.pool.query(
      `SELECT below_micro_usd::text AS below, to_micro_usd::text AS to FROM funding_policies
        WHERE external_ref = 'roll-a'`,
    );
    expect(moved).toEqual([{ below: '2000000', to: '4000000' }]);
    // The others stay on pro.
    expect((await records()).tenants.map((t) => t.plan)).toEqual(['team@1', 'pro@3', 'pro@3', 'pro@3']);
  });
});
