/**
 * Issue 47, Build 1, "one tenant, one picture", as an operator on call meets it: tenantctl as child processes and
 * the gateway over HTTP. Plan `ret` version 2 retires slot `web`; `ret-b`'s web key is still used by its consumer,
 * so the rollout holds ret-b (as it should) and moves ret-a. Before, `tenantctl status ret-b` said `plan ret@1` and
 * `last revoke-key web: COMPLETED (refused)` with no reason, no target version and no `plan:ret-b` run, and
 * `tenantctl list` did not show the plan. Now `tenantctl status`, `GET /v1/tenants/:ref` and `tenantctl list
 * --attention` (and `GET /v1/tenants?attention=true`) show the hold: the slot, the key and its last use, the
 * convergence from ret@1 to ret@2 and the rollout it is part of, and the way out, which works. A key issue waiting
 * at the active-key limit (an open run waiting for a person) is listed the same way, in the words `--wait` prints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../harness/cli.js';
import { waitFor } from '../harness/rotation-env.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs, HARNESS_OPERATOR } from '../harness/operator-gateway.js';
import { startPlatformQueueWorker, type PlatformQueueWorker } from '../harness/platform-queue-worker.js';
import type { LooseJson } from '../harness/sim-calls.js';

const RET_V1 = { keySlots: ['default', 'web'] };
const RET_V2 = { keySlots: ['default'] };
const FAST_GATE = { quietPeriod: '2s', pollInterval: '300ms', quietDeadline: '20s', overlapWindow: '2s' };

describe('one tenant, one picture: a tenant held by a plan rollout', () => {
  let env: OrchestratorEnv;
  const cli = (args: string[], timeoutMs = 120_000) => runCli(args, env.cliEnv, timeoutMs);
  const http = (method: string, path: string, body?: unknown) =>
    callAs(env.cliEnv.TENANTCTL_GATEWAY_URL!, method, path, HARNESS_OPERATOR.token, body);
  let using = true;
  let consumer: Promise<void> = Promise.resolve();
  let webKey = '';
  let platformWorker: PlatformQueueWorker | undefined;

  beforeAll(async () => {
    env = await createOrchestratorEnv('tenant-picture');
    await env.startOrchestratorWorker();
    // The platform-queue worker beside it: a slot revoke's quiet gate reads the key there, as in production.
    platformWorker = await startPlatformQueueWorker(env);
    const created = await cli(['plans', 'create', 'ret', '--json', JSON.stringify(RET_V1)]);
    expect(created.code, created.stderr).toBe(0);
    const onboarded = await Promise.all(
      ['ret-a', 'ret-b'].map((ref) =>
        http('POST', '/v1/tenants', { externalRef: ref, name: `Tenant ${ref}`, plan: 'ret' }),
      ),
    );
    for (const answer of onboarded) expect(answer.status, JSON.stringify(answer.json)).toBe(202);
    await Promise.all(
      onboarded.map((answer) => env.client.workflow.getHandle(answer.json.data.workflowId as string).result()),
    );
    const updated = await cli(['plans', 'update', 'ret', '--json', JSON.stringify(RET_V2), '--reason', 'no web key']);
    expect(updated.code, updated.stderr).toBe(0);

    // ret-b's web key is still in use by its consumer.
    const revealed = await cli(['key', 'reveal', 'ret-b', '--slot', 'web', '--reason', 'the consumer holds it']);
    expect(revealed.code, revealed.stderr).toBe(0);
    const token = revealed.stdout.trim();
    consumer = (async () => {
      while (using) {
        await fetch(`${env.sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } })
          .then((r) => r.body?.cancel())
          .catch(() => undefined);
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    const { rows } = await env.pool.query<{ keyId: string }>(
      `SELECT platform_key_id AS "keyId" FROM tenant_keys WHERE external_ref = 'ret-b' AND slot = 'web'
        AND status = 'active'`,
    );
    webKey = rows[0]!.keyId;

    // The rollout, as an admin starts it over HTTP (its quiet gate's timings are an HTTP option).
    const started = await http('POST', '/v1/plans/ret/rollouts', { options: FAST_GATE, reason: 'retire web' });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    await env.client.workflow.getHandle('plan-rollout:ret@2').result();
  }, 300_000);

  afterAll(async () => {
    using = false;
    await consumer;
    await platformWorker?.stop();
    await env?.close();
  });

  it('tenantctl status shows the hold: the convergence ret@1 → ret@2, its rollout, the slot, the key`s last use, the way out', async () => {
    const status = await cli(['status', 'ret-b']);
    expect(status.code, status.stderr).toBe(0);
    const out = status.stdout;
    expect(out).toMatch(/^tenant ret-b: active — "Tenant ret-b", sub-account \S+, plan ret@1$/m);
    expect(out).toMatch(/^plan convergence plan:ret-b: COMPLETED \(held\), ret@1 → ret@2, started \S+, ended \S+$/m);
    expect(out).toMatch(/^ {2}part of plan-rollout:ret@2$/m);
    expect(out).toMatch(/^ {2}held on ret@1, not moved onto ret@2$/m);
    expect(out).toMatch(
      new RegExp(
        `^ {2}slot web: key ${webKey} is still active, last used at \\S+; its revoke was refused \\(the key is in use`,
        'm',
      ),
    );
    expect(out).toMatch(
      new RegExp(
        `^ {2}way out: move whatever uses key ${webKey} to another slot's key, then revoke it through the quiet gate: ` +
          'tenantctl key revoke ret-b --slot web ',
        'm',
      ),
    );
    expect(out).toMatch(
      /^ {2}way out: then move it onto ret@2: tenantctl plans assign ret-b ret@2 \(or, once plan-rollout:ret@2 has ended, run it again: tenantctl plans rollout ret --version 2\)$/m,
    );
    expect(out).toMatch(/^fleet run plan-rollout:ret@2 \(rolloutPlan\): COMPLETED; started plan:ret-b$/m);
    expect(out).toMatch(
      /^last revoke-key web: COMPLETED \(refused\) \[key-revoke:ret-b:web\].*\n {2}part of plan:ret-b$/m,
    );
    expect(out).toMatch(/^attention plan:ret-b \(held\): held on ret@1, not moved onto ret@2$/m);

    // The other tenant converged: nothing waits for a person.
    const other = await cli(['status', 'ret-a']);
    expect(other.stdout).toMatch(/^tenant ret-a: .*, plan ret@2$/m);
    expect(other.stdout).toMatch(/^plan convergence plan:ret-a: COMPLETED \(converged\), ret@1 → ret@2/m);
    expect(other.stdout).not.toMatch(/^attention /m);
  });

  it('GET /v1/tenants/:ref carries the same hold, the convergence run, its rollout and the attention', async () => {
    const { status, json } = await http('GET', '/v1/tenants/ret-b');
    expect(status).toBe(200);
    const view = json.data as LooseJson;
    expect(view.plan.on).toEqual({ name: 'ret', version: 1 });
    expect(view.plan.convergence).toMatchObject({
      workflowId: 'plan:ret-b',
      status: 'COMPLETED',
      outcome: 'held',
      from: { name: 'ret', version: 1 },
      to: { name: 'ret', version: 2 },
      partOf: 'plan-rollout:ret@2',
    });
    expect(view.plan.convergence.reason).toContain(`slot web: its key ${webKey} was not revoked`);
    const [slot] = view.plan.convergence.hold.slots;
    expect(slot).toMatchObject({
      slot: 'web',
      state: 'revoke_refused',
      keyId: webKey,
      workflowId: 'key-revoke:ret-b:web',
    });
    expect(Date.parse(slot.lastUsedAt)).not.toBeNaN();
    expect(view.plan.convergence.hold.wayOut).toEqual([
      expect.stringContaining('tenantctl key revoke ret-b --slot web'),
      expect.stringContaining('tenantctl plans assign ret-b ret@2'),
    ]);
    expect(view.lastRuns).toContainEqual(
      expect.objectContaining({
        kind: 'plan',
        workflowId: 'plan:ret-b',
        outcome: 'held',
        partOf: 'plan-rollout:ret@2',
      }),
    );
    expect(view.fleetRuns).toEqual([
      expect.objectContaining({ workflowId: 'plan-rollout:ret@2', type: 'rolloutPlan', status: 'COMPLETED' }),
    ]);
    // The run's Web UI current details say the same (the metadata query the UI reads).
    const { currentDetails = '' } = await env.client.workflow
      .getHandle('plan:ret-b')
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    for (const line of view.plan.convergence.hold.holds) expect(currentDetails).toContain(line);
    for (const step of view.plan.convergence.hold.wayOut) expect(currentDetails).toContain(`way out: ${step}`);
    expect(view.attention).toEqual([
      {
        workflowId: 'plan:ret-b',
        stage: 'held',
        lines: view.plan.convergence.hold.holds,
        wayOut: view.plan.convergence.hold.wayOut,
      },
    ]);
  });

  it('tenantctl list shows the plans and marks ret-b; list --attention (and ?attention=true) lists only it, with the way out', async () => {
    const list = await cli(['list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ret-a\s+active\s+ret@2\s+\S+\s+Tenant ret-a$/m);
    expect(list.stdout).toMatch(/^ret-b\s+active\s+attention\s+ret@1\s+\S+\s+Tenant ret-b$/m);

    const attention = await cli(['list', '--attention']);
    expect(attention.code, attention.stderr).toBe(0);
    expect(attention.stdout).not.toContain('ret-a');
    expect(attention.stdout).toMatch(/^ret-b\s+active\s+attention\s+ret@1\s+\S+\s+Tenant ret-b$/m);
    expect(attention.stdout).toMatch(/^ {2}attention plan:ret-b \(held\): held on ret@1, not moved onto ret@2$/m);
    expect(attention.stdout).toMatch(new RegExp(`^ {4}slot web: key ${webKey} is still active, last used at `, 'm'));
    expect(attention.stdout).toMatch(/^ {4}way out: .*tenantctl key revoke ret-b --slot web/m);
    expect(attention.stdout).toMatch(/^ {4}way out: then move it onto ret@2: tenantctl plans assign ret-b ret@2/m);

    const all = await http('GET', '/v1/tenants');
    expect(all.status).toBe(200);
    expect(
      (all.json.data as LooseJson[]).map((t) => [t.externalRef, t.plan, t.attention.map((a: LooseJson) => a.stage)]),
    ).toEqual([
      ['ret-a', { name: 'ret', version: 2 }, []],
      ['ret-b', { name: 'ret', version: 1 }, ['held']],
    ]);
    const only = await http('GET', '/v1/tenants?attention=true');
    expect(only.status).toBe(200);
    expect((only.json.data as LooseJson[]).map((t) => t.externalRef)).toEqual(['ret-b']);
    expect(only.json.data[0].attention[0].wayOut[0]).toContain('tenantctl key revoke ret-b --slot web');
    const bad = await http('GET', '/v1/tenants?attention=yes');
    expect(bad.status).toBe(400);
    expect(bad.json.error.fields).toEqual(['attention']);
  });

  it('the way out ends the hold: the key revoked once unused, the assignment converges, nothing waits', async () => {
    using = false;
    await consumer;
    const revoke = await cli(
      [
        'key',
        'revoke',
        'ret-b',
        '--slot',
        'web',
        '--quiet-period',
        '2s',
        '--poll-interval',
        '300ms',
        '--reason',
        'moved',
      ],
      120_000,
    );
    expect(revoke.code, `${revoke.stdout}\n${revoke.stderr}`).toBe(0);
    // Revoked: the status says the slot is free and only the move is left.
    const freed = await cli(['status', 'ret-b']);
    expect(freed.stdout).toMatch(/^ {2}slot web: key \S+ has been revoked since; the slot is free$/m);
    expect(freed.stdout).not.toMatch(/way out: move whatever uses/);
    const assign = await cli(['plans', 'assign', 'ret-b', 'ret@2', '--reason', 'the hold is over', '--wait']);
    expect(assign.code, `${assign.stdout}\n${assign.stderr}`).toBe(0);
    const after = await cli(['status', 'ret-b']);
    expect(after.stdout).toMatch(/^plan convergence plan:ret-b: COMPLETED \(converged\), ret@1 → ret@2/m);
    expect(after.stdout).not.toMatch(/^attention /m);
    await waitFor(async () => ((await cli(['list', '--attention'])).stdout === '' ? true : undefined), 'no attention');
  });

  it('an open run waiting for a person (a key issue at the active-key limit) is listed in the words --wait prints', async () => {
    // ret-a holds default only: a, b fill the simulator's limit of 3, c waits for a person.
    for (const slot of ['a', 'b']) {
      const issued = await cli(['key', 'issue', 'ret-a', '--slot', slot, '--wait']);
      expect(issued.code, issued.stderr).toBe(0);
    }
    const started = await cli(['key', 'issue', 'ret-a', '--slot', 'c', '--key-limit-retry', '1h']);
    expect(started.code, started.stderr).toBe(0);
    const listed = await waitFor(async () => {
      const run = await cli(['list', '--attention']);
      return /attention key:ret-a:c \(key_limit\)/.test(run.stdout) ? run.stdout : undefined;
    }, 'ret-a listed for its key issue');
    expect(listed).toMatch(/^ret-a\s+active\s+attention\s+ret@2\s/m);
    const status = await http('GET', '/v1/tenants/ret-a');
    const run = (status.json.data.lastRuns as LooseJson[]).find((r) => r.workflowId === 'key:ret-a:c');
    const { formatWait } = await import('../../src/client/wait-lines.js');
    expect(listed).toContain(`  attention key:ret-a:c (key_limit): ${formatWait(run!.waiting)}`);
    expect(listed).toMatch(/^ {4}decision: retryKeyCreate$/m);
    expect(listed).toMatch(/^ {4}decision: abortKeyIssue$/m);
    expect(status.json.data.attention).toEqual([
      expect.objectContaining({
        workflowId: 'key:ret-a:c',
        stage: 'key_limit',
        wayOut: ['retryKeyCreate', 'abortKeyIssue'],
      }),
    ]);
    const aborted = await cli(['key', 'decide', 'ret-a', 'abort', '--slot', 'c', '--reason', 'not needed']);
    expect(aborted.code, aborted.stderr).toBe(0);
    await waitFor(async () => ((await cli(['list', '--attention'])).stdout === '' ? true : undefined), 'no attention');
  });
});
