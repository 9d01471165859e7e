import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../src/gateway/app.js';
import { buildTestGateway, listenOnLoopback, TEST_API_TOKEN, waitFor } from '../harness/gateway-app.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import type { LastRun } from '../../src/client/tenants/last-runs.js';
import { runCli } from '../harness/cli.js';
import { startOperatorGateway } from '../harness/operator-gateway.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createRotationEnv, type RotationEnv } from '../harness/rotation-env.js';

/**
 * The trigger API driven exactly as a signup backend drives it: HTTP to a listening gateway, a real
 * worker behind it, and every started run followed through the status URL until it has finished.
 */
const auth = { authorization: `Bearer ${TEST_API_TOKEN}` };
type Envelope = { data?: Record<string, unknown>; error?: { code: string; message: string; fields?: string[] } };

describe('the /v1 API against a running gateway and worker', () => {
  let env: RotationEnv;
  let gateway: GatewayApp;
  let url: string;

  const post = async (
    path: string,
    body?: unknown,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ) => {
    const response = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { ...auth, ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return {
      status: response.status,
      location: response.headers.get('location'),
      json: (await response.json()) as Envelope,
    };
  };
  const status = async (location: string) => {
    const response = await fetch(location.startsWith('http') ? location : `${url}${location}`, { headers: auth });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toMatch(/svsk_|svpk_/);
    return (JSON.parse(text) as { data: { record: { status: string } | null; lastRuns: LastRun[] } }).data;
  };
  /** Polls the status URL until the run of this kind (and workflow id) has finished; returns it. */
  const finishedRun = (location: string, workflowId: string) =>
    waitFor(
      () => status(location),
      (view) => view.lastRuns.some((run) => run.workflowId === workflowId && run.status !== 'RUNNING'),
      60_000,
      `${workflowId} finished`,
    ).then((view) => ({ view, run: view.lastRuns.find((run) => run.workflowId === workflowId)! }));
  const exists = (workflowId: string) => workflowExists(env.client, workflowId);

  beforeAll(async () => {
    env = await createRotationEnv('gw-http');
    gateway = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.cliEnv.SECRETS_KEYS!),
      options: { publicUrl: undefined },
    });
    url = await listenOnLoopback(gateway);
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it(
    'onboards, suspends, resumes, rotates (emergency) and closes a tenant through ' + '/v1, each run completing',
    async () => {
      const onboard = await post('/v1/tenants', {
        externalRef: 'http-life',
        name: 'Http Life',
        fundingMicroUsd: '2000000',
      });
      expect(onboard.status).toBe(202);
      const location = onboard.location!;
      expect(location).toBe('/v1/tenants/http-life');
      const onboarded = await finishedRun(location, 'onboard:http-life');
      expect(onboarded.run).toMatchObject({ kind: 'onboard', status: 'COMPLETED', outcome: 'active', failure: null });

      const steps = [
        ['suspend', { reason: 'unpaid invoice' }, 'suspend:http-life', 'suspended'],
        ['resume', { reason: 'invoice paid' }, 'resume:http-life', 'active'],
        ['rotate', { emergency: true, reason: 'token pasted in a ticket' }, 'rotate:http-life:default', 'active'],
        ['close', { reason: 'customer left' }, 'close:http-life', 'closed'],
      ] as const;
      for (const [action, body, workflowId, recordStatus] of steps) {
        const answer = await post(`/v1/tenants/http-life/${action}`, body);
        expect(answer.status, `${action}: ${JSON.stringify(answer.json)}`).toBe(202);
        expect(answer.json.data).toMatchObject({ action, workflowId });
        const { view, run } = await finishedRun(answer.location!, workflowId);
        expect(run, action).toMatchObject({ status: 'COMPLETED', failure: null });
        expect(view.record?.status, action).toBe(recordStatus);
      }
      const { view } = await finishedRun(location, 'close:http-life');
      expect(view.lastRuns.find((run) => run.kind === 'rotate')).toMatchObject({
        slot: 'default',
        status: 'COMPLETED',
        outcome: 'completed',
      });
      expect(view.lastRuns.find((run) => run.kind === 'close')).toMatchObject({ outcome: 'closed' });
      // The emergency rotation reached consumers through the configured notify deployer.
      expect(env.notify.received.some((notice) => notice.signatureValid && notice.event === 'keyRotated')).toBe(true);
    },
  );

  it('refuses a bad action body with 400 naming the field, and starts nothing', async () => {
    await env.onboard('http-bad');
    const cases: Array<[string, unknown, string]> = [
      ['suspend', {}, 'reason'],
      ['suspend', { reason: 'ok reason', operator: 'bad operator!' }, 'operator'],
      ['resume', { reason: 'ok reason', colour: 'red' }, 'colour'],
      ['close', { reason: 'ok reason', options: { pollInterval: 'soon' } }, 'options.pollInterval'],
      ['close', { reason: 'ok reason', externalRef: 'someone-else' }, 'externalRef'],
      ['rotate', { emergency: 'yes' }, 'emergency'],
      ['rotate', { slot: 'Not A Slot' }, 'slot'],
      ['rotate', { deployer: { kind: 'carrier-pigeon' } }, 'deployer.kind'],
      ['rotate', { operator: '' }, 'operator'],
      ['suspend', [1, 2], 'input'],
    ];
    for (const [action, body, field] of cases) {
      const answer = await post(`/v1/tenants/http-bad/${action}`, body);
      expect(answer.status, `${action} ${JSON.stringify(body)}`).toBe(400);
      expect(answer.json.error).toMatchObject({ code: 'INVALID_INPUT' });
      expect(answer.json.error!.fields, `${action} ${JSON.stringify(body)}`).toContain(field);
    }
    for (const id of ['suspend:http-bad', 'resume:http-bad', 'close:http-bad', 'rotate:http-bad:default'])
      expect(await exists(id), id).toBe(false);
  });

  it('refuses a rotation whose deployer is not configured at start (422), and the CLI says the same', async () => {
    await env.onboard('http-nodeploy');
    const unconfigured = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.cliEnv.SECRETS_KEYS!),
      options: { deployers: { defaultDeployer: 'notify', notifyConfigured: false } },
    });
    try {
      const answer = await unconfigured.app.inject({
        method: 'POST',
        url: '/v1/tenants/http-nodeploy/rotate',
        headers: auth,
        payload: { emergency: true },
      });
      expect(answer.statusCode).toBe(422);
      expect(answer.json().error).toMatchObject({ code: 'DEPLOYER_NOT_CONFIGURED', fields: ['deployer'] });
      expect(answer.json().error.message).toMatch(/ROTATION_NOTIFY_URL/);
    } finally {
      await unconfigured.app.close();
    }
    expect(await exists('rotate:http-nodeploy:default')).toBe(false);

    // tenantctl asks a gateway that cannot run the notify deployer: the server's configuration decides.
    const unconfiguredGateway = await startOperatorGateway(
      { ...env, secretsKeys: env.cliEnv.SECRETS_KEYS! },
      { gateway: { deployers: { defaultDeployer: 'notify', notifyConfigured: false } } },
    );
    const unconfiguredEnv = { ...env.cliEnv, ...unconfiguredGateway.cliEnv };
    const cli = await runCli(['rotate-key', 'http-nodeploy', '--emergency'], unconfiguredEnv);
    expect(cli.code).not.toBe(0);
    expect(cli.stdout).not.toMatch(/started/);
    expect(cli.stderr.trim().split('\n')).toHaveLength(1);
    expect(cli.stderr).toMatch(
      /^error: the notify deployer is not configured \(set ROTATION_NOTIFY_URL and ROTATION_NOTIFY_SECRET\)/,
    );
    expect(await exists('rotate:http-nodeploy:default')).toBe(false);

    const schedule = await runCli(['rotation', 'schedule', 'http-nodeploy', '--every', '30d'], unconfiguredEnv);
    expect(schedule.code).not.toBe(0);
    expect(schedule.stderr).toMatch(/^error: the notify deployer is not configured/);
    const withProjectEnv = await runCli(['rotate-key', 'http-nodeploy', '--deployer', 'project-env'], unconfiguredEnv);
    await unconfiguredGateway.close();
    expect(withProjectEnv.stdout + withProjectEnv.stderr).toMatch(/^started: rotate:http-nodeploy:default/);
  });

  it('shows a failed run with its failure message in the status URL and in `tenantctl status`', async () => {
    await env.onboard('http-fails');
    // project-env with no project defining the variable: the deploy step fails for good.
    const answer = await post('/v1/tenants/http-fails/rotate', {
      deployer: { kind: 'project-env' },
      reason: 'try project-env',
    });
    expect(answer.status).toBe(202);
    const { run } = await finishedRun(answer.location!, 'rotate:http-fails:default');
    expect(run).toMatchObject({
      kind: 'rotate',
      slot: 'default',
      status: 'FAILED',
      outcome: null,
      failure: { type: 'DEPLOY_TARGET_MISSING' },
    });
    expect(run.failure!.message).toMatch(/no project of sub-account .* defines TENANT_API_KEY/);

    const cli = await runCli(['status', 'http-fails'], env.cliEnv);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/^last rotate default: FAILED \[rotate:http-fails:default\]/m);
    expect(cli.stdout).toMatch(
      /^ {2}failed: .*no project of sub-account .* defines TENANT_API_KEY.* \[DEPLOY_TARGET_MISSING\]$/m,
    );
    expect(cli.stdout).toMatch(/^last onboard: COMPLETED \(active\)/m);
    expect(cli.stdout).not.toMatch(/svsk_/);
  });

  it('names an unknown onboarding field, answers text/plain with 415 and names a __proto__ key', async () => {
    const unknown = await post('/v1/tenants', { externalRef: 'http-odd', name: 'Odd', tier: 'gold' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['tier'] });
    expect(unknown.json.error!.message).toMatch(/tier: is not a known field/);

    const text = await post('/v1/tenants', JSON.stringify({ externalRef: 'http-odd', name: 'Odd' }), {
      'content-type': 'text/plain',
    });
    expect(text.status).toBe(415);
    expect(text.json.error!.code).toBe('UNSUPPORTED_MEDIA_TYPE');

    const proto = await post('/v1/tenants', '{"externalRef":"http-odd","name":"Odd","__proto__":{"admin":true}}');
    expect(proto.status).toBe(400);
    expect(proto.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['__proto__'] });
    const nested = await post(
      '/v1/tenants/http-odd/suspend',
      '{"reason":"why not","options":{"constructor":{"prototype":{}}}}',
    );
    expect(nested.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['options.constructor.prototype'] });
    expect(await exists('onboard:http-odd')).toBe(false);
  });
});
