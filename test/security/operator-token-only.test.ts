/**
 * One door: an operator with only a token and the gateway's URL — no DATABASE_URL, no SECRETS_KEYS,
 * no Temporal address, no stack.json — does the operator tasks through tenantctl, and the server
 * decides who they are. The child's environment is built from nothing, so a command that still
 * opened the database (or the vault) itself would fail here on its missing configuration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

describe('tenantctl with a token and the gateway URL only', () => {
  let env: OrchestratorEnv;
  const cli = (args: string[]) =>
    runCli(args, {
      DATA_DIR: '/nonexistent-operator-dir',
      TENANTCTL_GATEWAY_URL: env.cliEnv.TENANTCTL_GATEWAY_URL!,
      TENANTCTL_OPERATOR_TOKEN: env.cliEnv.TENANTCTL_OPERATOR_TOKEN!,
    });

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-token-only');
    await env.startOrchestratorWorker();
    await (
      await startOnboarding(env.client, { externalRef: 'tok-acme', name: 'Acme' }, { taskQueue: env.taskQueue })
    ).result();
  });
  afterAll(async () => {
    await env?.close();
  });

  it('reads, reveals and decides through the gateway, audited under the token’s name', async () => {
    const whoami = await cli(['operators', 'whoami']);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(whoami.stdout.trim()).toBe('ops (admin)');

    const status = await cli(['status', 'tok-acme']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^tenant tok-acme: active — "Acme"/);

    const list = await cli(['list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toContainEqual(
      expect.objectContaining({ externalRef: 'tok-acme', status: 'active' }),
    );

    const reveal = await cli(['key', 'reveal', 'tok-acme', '--reason', 'deploy by hand']);
    expect(reveal.code, reveal.stderr).toBe(0);
    expect(reveal.stdout).toMatch(/^svsk_\S+\n$/);

    const approvals = await cli(['approvals', 'list']);
    expect(approvals.code, approvals.stderr).toBe(0);
    expect(approvals.stdout).toBe('no approval requests\n');

    const { rows } = await env.pool.query(
      `SELECT actor FROM audit_log WHERE external_ref = 'tok-acme' AND action = 'key.revealed'`,
    );
    expect(rows).toEqual([{ actor: 'operator:ops' }]);
  });

  it('says which setting is missing, in one line, when the token or the URL is', async () => {
    const noToken = await runCli(['status', 'tok-acme'], {
      DATA_DIR: '/nonexistent-operator-dir',
      TENANTCTL_GATEWAY_URL: env.cliEnv.TENANTCTL_GATEWAY_URL!,
    });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/^error: TENANTCTL_OPERATOR_TOKEN: is required/);
    const plainHttp = await runCli(['status', 'tok-acme'], {
      DATA_DIR: '/nonexistent-operator-dir',
      TENANTCTL_GATEWAY_URL: 'http://gateway.example.com:8080',
      TENANTCTL_OPERATOR_TOKEN: env.cliEnv.TENANTCTL_OPERATOR_TOKEN!,
    });
    expect(plainHttp.code).toBe(2);
    expect(plainHttp.stderr).toMatch(/^error: TENANTCTL_GATEWAY_URL: must be https/);
  });
});
