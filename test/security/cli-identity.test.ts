/**
 * tenantctl with an OPERATORS list, run as a child process as an operator runs it: every operator
 * command authenticates the presented token before it reads or writes anything (before this, the
 * approvals queue, event subscriptions, key issue, imports and webhooks answered anyone), and a close
 * sooner than CLOSE_DELAY is for admins only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateOperator } from '../../src/secrets/operators.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';

const alice = generateOperator('alice');
const root = generateOperator('root', 'admin');
const OPERATORS = `${alice.entry},${root.entry}`;

describe('tenantctl authenticates every operator command', () => {
  let env: OrchestratorEnv;
  let gateway: OperatorGateway;
  // The server's identities and policy are the gateway's; the local ones matter to the commands that
  // still open the database themselves.
  const cli = (args: string[], token: string | undefined, extra: Record<string, string> = {}) =>
    runCli(args, {
      ...env.cliEnv,
      OPERATORS,
      CLOSE_DELAY: '30d',
      TENANTCTL_GATEWAY_URL: gateway.url,
      TENANTCTL_OPERATOR_TOKEN: token ?? '',
      ...extra,
    });
  const counts = async () =>
    (
      await env.pool.query<Record<string, number>>(
        `SELECT (SELECT count(*)::int FROM audit_log) AS audit,
                (SELECT count(*)::int FROM event_subscriptions) AS subscriptions,
                (SELECT count(*)::int FROM approval_requests) AS approvals,
                (SELECT count(*)::int FROM tenant_keys) AS keys`,
      )
    ).rows[0]!;

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-cli');
    await env.startOrchestratorWorker();
    gateway = await startOperatorGateway(env, {
      entries: [alice.entry, root.entry],
      gateway: { closeDelay: '30d' },
    });
    const onboarded = await runCli(['onboard', '--external-ref', 'sec-cli-acme', '--name', 'Acme', '--wait'], {
      ...env.cliEnv,
    });
    expect(onboarded.code, onboarded.stderr).toBe(0);
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('refuses a missing or unknown token with one line, for reads and writes alike, and writes nothing', async () => {
    const before = await counts();
    const commands = [
      ['approvals', 'list'],
      ['events', 'list'],
      ['events', 'subscribe', '--url', 'https://receiver.example/x', '--types', 'tenant.suspended'],
      ['key', 'issue', 'sec-cli-acme', '--slot', 'ci'],
      ['key', 'revoke', 'sec-cli-acme', '--slot', 'default', '--force', '--reason', 'x'],
      ['webhooks', 'list'],
      ['status', 'sec-cli-acme'],
      ['list'],
    ];
    for (const args of commands) {
      for (const token of [undefined, 'tpo_op_not-a-real-token-0123456789']) {
        const run = await cli(args, token);
        expect(run.code, `${args.join(' ')} with ${token ?? 'no token'}`).not.toBe(0);
        expect(run.stdout, args.join(' ')).toBe('');
        expect(run.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
        // The same line whether the gateway or the local list refused it.
        expect(run.stderr).toMatch(
          token
            ? /no operator in OPERATORS|the gateway at \S+ does not know this token/
            : /TENANTCTL_OPERATOR_TOKEN: is required/,
        );
      }
    }
    expect(await counts()).toEqual(before);
    const listed = await cli(['approvals', 'list'], alice.token);
    expect(listed.code, listed.stderr).toBe(0);
  });

  it('refuses an operator a close sooner than CLOSE_DELAY, naming --after; an admin may', async () => {
    const refused = await cli(['close', 'sec-cli-acme', '--after', '0', '--reason', 'now', '--no-wait'], alice.token);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/^error: --after: must be at least 30d/);
    await expect(env.client.workflow.getHandle('close:sec-cli-acme').describe()).rejects.toThrow();
    const admin = await cli(['close', 'sec-cli-acme', '--after', '0', '--reason', 'now'], root.token);
    expect(admin.code, admin.stderr).toBe(0);
    const { rows } = await env.pool.query(`SELECT status FROM tenants WHERE external_ref = 'sec-cli-acme'`);
    expect(rows).toEqual([{ status: 'closed' }]);
  });
});
