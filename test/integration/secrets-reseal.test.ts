import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { generateMasterKey } from '../../src/secrets/master-keys.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway } from '../harness/operator-gateway.js';

describe('master-key rotation', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('reseal');
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('reseals every token under the new first key, after which the old key can be dropped', async () => {
    await (
      await startOnboarding(env.client, { externalRef: 'reseal-me', name: 'Reseal Me' }, { taskQueue: env.taskQueue })
    ).result();
    const before = await runCli(['key', 'reveal', 'reseal-me', '--reason', 'reseal check', '--json'], env.cliEnv);
    const token = (JSON.parse(before.stdout) as { token: string }).token;

    const next = generateMasterKey('k-next');
    const both = { ...env.cliEnv, SECRETS_KEYS: `${next},${env.secretsKeys}` };
    const pending = await runCli(['secrets', 'reseal', '--check'], both);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toMatch(/tenant tokens: 1 to reseal/);
    const resealed = await runCli(['secrets', 'reseal'], both);
    expect(resealed.code, resealed.stderr).toBe(0);
    expect(resealed.stdout).toMatch(/tenant tokens: 1 resealed/);
    expect((await runCli(['secrets', 'reseal', '--check'], both)).code).toBe(0);

    // Reveals open the vault in the gateway: one that holds only the new key reads the resealed token.
    const newOnly = await startOperatorGateway({ ...env, secretsKeys: next });
    const onlyNew = await runCli(['key', 'reveal', 'reseal-me', '--reason', 'reseal check', '--json'], {
      ...env.cliEnv,
      ...newOnly.cliEnv,
    }).finally(() => newOnly.close());
    expect(onlyNew.code, onlyNew.stderr).toBe(0);
    expect((JSON.parse(onlyNew.stdout) as { token: string }).token).toBe(token);
    const { rows } = await env.pool.query(`SELECT master_key_id FROM key_secrets`);
    expect(rows).toEqual([{ master_key_id: 'k-next' }]);
  });
});
