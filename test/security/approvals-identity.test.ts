/**
 * `tenantctl approvals list` with OPERATORS set, run as a child process as an operator runs it, while
 * a request is pending (issue 35, finding 4): a missing, empty or unknown token — in the environment or
 * as `--operator-token`, with or without the server's own settings beside it — gets one error and never
 * the queue; over HTTP the same tokens get the same 401. Only an operator's token lists the request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestApproval } from '../../src/client/approvals/approvals.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { TEST_API_TOKEN } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

const alice = generateOperator('alice');
const bob = generateOperator('bob');
const OPERATORS = `${alice.entry},${bob.entry}`;
const WRONG = 'tpo_op_not-a-real-token-0123456789';

describe('approvals list answers an unknown or missing token with one error', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  let pendingId: string;

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-approvals');
    await env.startOrchestratorWorker();
    gateway = await startOperatorGateway(env, { entries: [alice.entry, bob.entry] });
    const onboarded = await runCli(['onboard', '--external-ref', 'apr-acme', '--name', 'Acme', '--wait'], {
      ...env.cliEnv,
    });
    expect(onboarded.code, onboarded.stderr).toBe(0);
    pendingId = (
      await requestApproval(env.pool, {
        action: 'keyReveal',
        externalRef: 'apr-acme',
        params: { slot: 'default' },
        by: { operator: 'alice', reason: 'deploy by hand' },
        ttlMs: 3_600_000,
      })
    ).id;
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('the CLI: one error line, nothing on stdout, for every way of presenting no valid token', async () => {
    // As an operator's shell may hold it: the server's own settings beside the CLI's.
    const serverSide = { ...env.cliEnv, OPERATORS };
    const cases: Array<{ why: string; args: string[]; env: Record<string, string>; error: RegExp }> = [
      { why: 'no token at all', args: [], env: { TENANTCTL_GATEWAY_URL: gateway.url }, error: /is required/ },
      {
        why: 'no token, the server settings set',
        args: [],
        env: { ...withoutToken(serverSide), TENANTCTL_GATEWAY_URL: gateway.url },
        error: /is required/,
      },
      {
        why: 'an empty token',
        args: [],
        env: { ...serverSide, TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: '' },
        error: /is required/,
      },
      {
        why: 'an unknown token',
        args: [],
        env: { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: WRONG },
        error: /does not know this token/,
      },
      {
        why: 'an unknown token, the server settings set',
        args: [],
        env: { ...serverSide, TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: WRONG },
        error: /does not know this token|no operator in OPERATORS/,
      },
      {
        why: 'an unknown --operator-token over a valid one in the environment',
        args: ['--operator-token', WRONG],
        env: { ...serverSide, TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: alice.token },
        error: /does not know this token|no operator in OPERATORS/,
      },
    ];
    for (const c of cases) {
      for (const extra of [[], ['--json'], ['--all']]) {
        const run = await runCli([...c.args, 'approvals', 'list', ...extra], c.env);
        const what = `${c.why} ${extra.join(' ')}`;
        expect(run.code, what).toBe(2);
        expect(run.stdout, what).toBe('');
        expect(run.stdout + run.stderr, what).not.toContain(pendingId);
        expect(run.stderr.trim().split('\n'), what).toHaveLength(1);
        expect(run.stderr, what).toMatch(c.error);
      }
    }
    const listed = await runCli(['approvals', 'list'], {
      TENANTCTL_GATEWAY_URL: gateway.url,
      TENANTCTL_OPERATOR_TOKEN: bob.token,
    });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(pendingId);
  });

  it('HTTP: the same 401 for a missing, malformed or unknown token; 403 for a signup backend', async () => {
    const get = (authorization?: string) =>
      fetch(`${gateway.url}/v1/approvals?all=true`, authorization ? { headers: { authorization } } : {});
    for (const authorization of [undefined, '', 'Bearer', `Bearer ${WRONG}`, `Basic ${WRONG}`, WRONG]) {
      const response = await get(authorization);
      const text = await response.text();
      expect(response.status, String(authorization)).toBe(401);
      expect(text).not.toContain(pendingId);
      expect(JSON.parse(text)).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    }
    const backend = await get(`Bearer ${TEST_API_TOKEN}`);
    expect(backend.status).toBe(403);
    expect(await backend.text()).not.toContain(pendingId);
    const operator = await get(`Bearer ${bob.token}`);
    expect(operator.status).toBe(200);
    expect(await operator.text()).toContain(pendingId);
  });
});

function withoutToken(env: Record<string, string>): Record<string, string> {
  const { TENANTCTL_OPERATOR_TOKEN: _token, ...rest } = env;
  return rest;
}
