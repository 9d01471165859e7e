import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformClient } from '../../src/platform/index.js';
import { importParentKeyToken, startParentKeySource } from '../../src/secrets/parent-key-source.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/index.js';
import { runCli } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { startOperatorGateway } from '../harness/operator-gateway.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../src/domain/ids.js';
import { takeTurns } from '../harness/take-turn.js';

// These files run the parent key rotation, whose workflow id is one per namespace: they take turns.
takeTurns(PARENT_KEY_ROTATION_WORKFLOW_ID);

/** The parent's platform key in our records: import, show, and a process that recovers by itself on a 401. */
describe('the parent platform key, sealed in our records', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('parent-key');
  });
  afterAll(async () => env?.close());

  const vault = () => createVault(parseMasterKeys(env.secretsKeys));
  const rows = async () =>
    (await env.pool.query<{ status: string }>(`SELECT status FROM parent_keys ORDER BY id`)).rows.map((r) => r.status);

  it('refuses to import a value that is not a platform key, naming the field, and writes nothing', async () => {
    for (const [args, input] of [
      [['parent-key', 'import', '--operator', 'ops', '--reason', 'first import'], 'svsk_tenant_key_0001'],
      [['parent-key', 'import', '--operator', 'ops', '--reason', 'first import'], 'svpk_ short'],
      [['parent-key', 'import', '--operator', 'ops', '--reason', 'x'], DEFAULT_PLATFORM_KEY],
    ] as const) {
      const result = await runCli([...args], { ...env.cliEnv, PLATFORM_API_KEY: '' }, 60_000, input);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/token: must be a platform key|reason: /);
      expect(result.stderr + result.stdout).not.toContain('svsk_tenant_key_0001');
    }
    expect(await rows()).toEqual([]);
    const { rows: audit } = await env.pool.query(`SELECT 1 FROM audit_log WHERE action LIKE 'parent_key.%'`);
    expect(audit).toEqual([]);
  });

  it('imports PLATFORM_API_KEY once, then shows ids and fingerprints only', async () => {
    const imported = await runCli(
      ['parent-key', 'import', '--from-env', '--operator', 'ops', '--reason', 'first import', '--json'],
      env.cliEnv,
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({
      imported: true,
      fingerprint: expect.stringMatching(/^sha256:/),
    });
    const again = await runCli(
      ['parent-key', 'import', '--from-env', '--operator', 'ops', '--reason', 'again', '--json'],
      env.cliEnv,
    );
    expect(JSON.parse(again.stdout)).toMatchObject({ imported: false });
    const shown = await runCli(['parent-key', 'show', '--json'], env.cliEnv);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toContain('svpk_');
    expect(JSON.parse(shown.stdout)).toMatchObject({ current: { status: 'current', source: 'import' } });
    const { rows: sealed } = await env.pool.query<{ sealed: string }>(`SELECT sealed FROM parent_keys`);
    expect(sealed.map((r) => r.sealed).join()).not.toContain('svpk_');
    expect(await rows()).toEqual(['current']);
  });

  it('puts the parent key rotation on a Temporal Schedule whose action is the launcher', async () => {
    // Over /v1: scheduling is an admin's (parent.key): an operator is refused and nothing is made; a viewer reads.
    const oncall = generateOperator('oncall-pk', 'operator');
    const viewer = generateOperator('viewer-pk', 'viewer');
    const gateway = await startOperatorGateway(env, { entries: [oncall.entry, viewer.entry] });
    try {
      const refused = await fetch(`${gateway.url}/v1/parent-key/schedule`, {
        method: 'POST',
        headers: { authorization: `Bearer ${oncall.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ every: '30d' }),
      });
      expect(refused.status).toBe(403);
      await expect(env.client.schedule.getHandle('parent-key-rotation').describe()).rejects.toThrow();
      const shown = await fetch(`${gateway.url}/v1/parent-key`, {
        headers: { authorization: `Bearer ${viewer.token}` },
      });
      expect(shown.status).toBe(200);
      const text = await shown.text();
      expect(text).not.toContain('svpk_');
      expect(JSON.parse(text)).toMatchObject({ data: { current: { status: 'current' } } });
    } finally {
      await gateway.close();
    }
    const made = await runCli(['parent-key', 'schedule', '--every', '30d'], env.cliEnv);
    expect(made.code, made.stderr).toBe(0);
    const handle = env.client.schedule.getHandle('parent-key-rotation');
    try {
      const described = await handle.describe();
      expect(described.action).toMatchObject({ workflowType: 'rotateParentKeyOnSchedule' });
      expect(described.policies.overlap).toBe('SKIP');
      const bad = await runCli(['parent-key', 'schedule', '--every', 'monthly'], env.cliEnv);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/every: must be a duration/);
    } finally {
      await handle.delete();
    }
  });

  it('a process that missed a key switch recovers by itself on its first 401, with one retry', async () => {
    // A process with a cached key and no timely refresh: it misses the switch below.
    const source = await startParentKeySource({ pool: env.pool, vault: vault(), refreshMs: 3_600_000 });
    try {
      expect(source.current()?.reveal()).toBe(DEFAULT_PLATFORM_KEY);
      const admin = createPlatformClient({ baseUrl: env.sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
      const created = await admin.createPlatformKey({ name: 'test-switch' });
      await importParentKeyToken(
        { pool: env.pool, vault: vault() },
        { token: created.token.reveal(), onlyIfNone: false, actor: 'test' },
      );
      const old = (await admin.listPlatformKeys({})).keys.find(
        (k) => k.id !== created.key.id && k.status !== 'revoked',
      );
      await admin.revokePlatformKey({ keyId: old!.id });

      const before = env.sim.state().stats.unauthorizedByPrefix.svpk_ ?? 0;
      const client = createPlatformClient({ baseUrl: env.sim.apiBase, platformKey: source });
      const { subaccounts } = await client.listSubaccounts({});
      expect(Array.isArray(subaccounts)).toBe(true);
      // Exactly one call was answered 401 (the stale key), and the process now holds the new key.
      expect((env.sim.state().stats.unauthorizedByPrefix.svpk_ ?? 0) - before).toBe(1);
      expect(source.current()?.reveal()).toBe(created.token.reveal());
      await client.listSubaccounts({});
      expect((env.sim.state().stats.unauthorizedByPrefix.svpk_ ?? 0) - before).toBe(1);

      // A key nobody holds any more: the 401 stands (no loop, no second retry).
      const holder = createPlatformClient({ baseUrl: env.sim.apiBase, platformKey: created.token });
      await holder.revokePlatformKey({ keyId: created.key.id });
      await expect(client.listSubaccounts({})).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    } finally {
      await source.close();
    }
  });
});

describe('master-key rotation reseals the parent key too', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('parent-key-reseal');
  });
  afterAll(async () => env?.close());

  it('reseals parent_keys under the new master key, so dropping the old one keeps the key readable', async () => {
    const { generateMasterKey } = await import('../../src/secrets/master-keys.js');
    const { resealAll } = await import('../../src/secrets/reseal.js');
    const old = createVault(parseMasterKeys(env.secretsKeys));
    await importParentKeyToken(
      { pool: env.pool, vault: old },
      { token: DEFAULT_PLATFORM_KEY, onlyIfNone: true, actor: 'test' },
    );
    const next = generateMasterKey('k-next');
    const both = createVault(parseMasterKeys(`${next},${env.secretsKeys}`));
    expect((await resealAll({ pool: env.pool, vault: both })).parentKeys).toEqual({ resealed: 1, current: 0 });
    const onlyNew = createVault(parseMasterKeys(next));
    const source = await startParentKeySource({ pool: env.pool, vault: onlyNew, refreshMs: 60_000 });
    try {
      expect(source.current()?.reveal()).toBe(DEFAULT_PLATFORM_KEY);
    } finally {
      await source.close();
    }
  });
});
