import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ParentKeysView, ParentPlatformKeysView } from '../../src/client/parent-key/parent-key.js';
import { loadConfig } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../src/main/gateway.js';
import { generateMasterKey } from '../../src/secrets/master-keys.js';
import { generateOperator } from '../../src/secrets/operators.js';
import { DEFAULT_PARENT_ID, startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { runCli, spawnCli } from '../harness/cli.js';
import { createTestContext, type TestContext } from '../harness/context.js';
import { orchestratorCliEnv } from '../harness/onboarding-env.js';
import { callAs, HARNESS_OPERATOR } from '../harness/operator-gateway.js';
import { PARENT_KEY_ROTATION_WORKFLOW_ID } from '../../src/domain/ids.js';
import { takeTurns } from '../harness/take-turn.js';

// These files run the parent key rotation, whose workflow id is one per namespace: they take turns.
takeTurns(PARENT_KEY_ROTATION_WORKFLOW_ID);

/**
 * The parent's own key rotated beside another service's active platform key that is in use (the parent's usual
 * shape), as an operator does it: tenantctl as a child process and HTTP against the running gateway. The key
 * imported from PLATFORM_API_KEY has no platform id, so the rotation waits for the operator to name it; the wait is
 * shown, revoke-anyway is refused with the reason, the operator lists the keys and names ours, the rotation
 * completes, and the other service's key is never touched nor any of its calls refused.
 */
const OTHER_TOKEN = 'svpk_sim_DO_NOT_USE_other_service_0001';
const oncall = generateOperator('oncall-pk2', 'operator');

describe("the parent key rotated beside another service's platform key", () => {
  let ctx: TestContext;
  let sim: RunningSimulator;
  let gateway: RunningGateway | undefined;
  let env: Record<string, string>;
  let cli: Record<string, string>;
  let otherKeyId: string;
  const children: ChildProcess[] = [];
  // The other service: one call every 200 ms with its own key, counting every answer that is not a success.
  const otherService = { calls: 0, refused: 0, timer: undefined as NodeJS.Timeout | undefined };

  beforeAll(async () => {
    ctx = await createTestContext('parent-key-other');
    sim = await startSimulator();
    const added = await fetch(`${sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/platform-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'billing-service', token: OTHER_TOKEN }),
    });
    expect(added.status).toBe(200);
    otherKeyId = ((await added.json()) as { id: string }).id;
    otherService.timer = setInterval(() => {
      otherService.calls += 1;
      fetch(`${sim.apiBase}/subaccounts`, { headers: { authorization: `Bearer ${OTHER_TOKEN}` } }).then(
        (r) => {
          if (!r.ok) otherService.refused += 1;
          return r.body?.cancel();
        },
        () => (otherService.refused += 1),
      );
    }, 200);

    const secretsKeys = generateMasterKey(`t${randomBytes(3).toString('hex')}`);
    env = {
      ...orchestratorCliEnv(ctx, sim, secretsKeys),
      PARENT_KEY_REFRESH_MS: '300',
      LOG_LEVEL: 'warn',
    };
    // The worker's first start imports PLATFORM_API_KEY: our key, with no platform id.
    const worker = spawnCli(['worker'], env);
    children.push(worker.child);
    await worker.ready;
    gateway = await startGateway(
      loadConfig({ ...env, GATEWAY_PORT: '0', OPERATORS: `${HARNESS_OPERATOR.entry},${oncall.entry}` }),
    );
    cli = { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: HARNESS_OPERATOR.token };
  }, 240_000);

  afterAll(async () => {
    clearInterval(otherService.timer);
    await gateway?.close();
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await ctx?.close();
    await sim?.close();
  });

  const platformKeys = () =>
    sim.state().apiKeys.filter((k) => k.kind === 'platform' && k.parentId === DEFAULT_PARENT_ID);
  const asAdmin = (method: string, path: string, body?: unknown) =>
    callAs(gateway!.url, method, path, HARNESS_OPERATOR.token, body);

  it('shows the wait, refuses revoke-anyway, lets the operator name our key, and completes', async () => {
    const ours = platformKeys().find((k) => k.id !== otherKeyId && k.status === 'active')!;
    expect(platformKeys().filter((k) => k.status === 'active')).toHaveLength(2);

    const rotation = runCli(
      [
        'parent-key',
        'rotate',
        '--reason',
        'hygiene',
        '--poll-interval',
        '300ms',
        '--stale-after',
        '3s',
        '--quiet-period',
        '1s',
        '--wait',
        '--json',
      ],
      cli,
      240_000,
    );

    // parent-key show (HTTP) includes the rotation and what it waits for.
    let view: ParentKeysView | undefined;
    for (let i = 0; i < 300; i += 1) {
      const shown = await asAdmin('GET', '/v1/parent-key');
      view = (shown.json as unknown as { data: ParentKeysView }).data;
      // The stage and the wait are two queries, each answered as of its own workflow task: wait for both.
      if (view.rotation?.stage === 'naming_old_key' && view.rotation.waiting?.stage === 'naming_old_key') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const waiting = view!.rotation!;
    expect(waiting.stage).toBe('naming_old_key');
    expect(waiting.waiting!.decisions).toEqual(['abortRotation', 'escalateToEmergency']);
    expect(waiting.waiting!.waitingFor).toMatch(/parent-key identify/);
    expect([...waiting.candidates].sort()).toEqual([ours.id, otherKeyId].sort());
    expect(waiting.oldKey).toMatchObject({ platformKeyId: null });
    // The CLI prints the same.
    const shownCli = await runCli(['parent-key', 'show'], cli);
    expect(shownCli.code, shownCli.stderr).toBe(0);
    expect(shownCli.stdout).toMatch(/rotation rotate-parent-key .*: naming_old_key/);
    expect(shownCli.stdout).toMatch(/waiting \(naming_old_key\) since/);
    expect(shownCli.stdout).not.toMatch(/svpk_[A-Za-z0-9]/);

    // revoke-anyway cannot apply while the old key's platform id is unknown: refused with the reason, not exit 0.
    const decided = await runCli(['parent-key', 'decide', 'revoke-anyway', '--reason', 'just do it'], cli);
    expect(decided.code).not.toBe(0);
    expect(decided.stderr).toMatch(/platform id is unknown/);

    // An operator (no parent.key) may neither list nor name the keys.
    for (const [method, path, body] of [
      ['GET', '/v1/parent-key/platform-keys', undefined],
      ['POST', '/v1/parent-key/identify', { keyId: ours.id, reason: 'mine' }],
    ] as const) {
      const refused = await callAs(gateway!.url, method, path, oncall.token, body);
      expect(refused.status, path).toBe(403);
    }

    // The admin lists the keys: ours shows no use since our processes switched away, the other service's does.
    let listed: ParentPlatformKeysView | undefined;
    for (let i = 0; i < 100; i += 1) {
      const result = await runCli(['parent-key', 'platform-keys', '--json'], cli);
      expect(result.code, result.stderr).toBe(0);
      listed = JSON.parse(result.stdout) as ParentPlatformKeysView;
      if (listed.keys.find((k) => k.id === otherKeyId)?.verdict === 'unlikely') break;
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(listed!.method).toBe('switch');
    expect(listed!.target).toMatchObject({ status: 'previous' });
    const byId = new Map(listed!.keys.map((k) => [k.id, k]));
    expect(byId.get(otherKeyId)).toMatchObject({ verdict: 'unlikely', name: 'billing-service' });
    expect(byId.get(ours.id)).toMatchObject({ verdict: 'likely' });
    expect([...byId.values()].filter((k) => k.verdict === 'recorded')).toHaveLength(1);
    const text = await runCli(['parent-key', 'platform-keys'], cli);
    expect(text.stdout).toContain(`${ours.id}  likely`);
    expect(text.stdout).toMatch(/no token prefix or fingerprint/);

    // Naming the other service's key is refused with what its last use says; nothing is recorded.
    const wrong = await asAdmin('POST', '/v1/parent-key/identify', { keyId: otherKeyId, reason: 'wrong one' });
    expect(wrong.status).toBe(409);
    expect(JSON.stringify(wrong.json)).toMatch(/does not look like our key/);
    const unknown = await runCli(['parent-key', 'identify', 'key_nope', '--reason', 'typo'], cli);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/not an active platform key of the parent/);

    const named = await runCli(['parent-key', 'identify', ours.id, '--reason', 'ours by last use', '--json'], cli);
    expect(named.code, named.stderr).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({
      platformKeyId: ours.id,
      outcome: 'recorded',
      rotationWoken: true,
    });
    const { rows: audit } = await ctx.pool.query<{ actor: string; subject: string }>(
      `SELECT actor, subject FROM audit_log WHERE action = 'parent_key.identified'`,
    );
    expect(audit).toEqual([{ actor: 'operator:ops', subject: ours.id }]);

    const done = await rotation;
    expect(done.code, done.stderr).toBe(0);
    const { result } = JSON.parse(done.stdout) as {
      result: { outcome: string; oldKey: { platformKeyId: string }; newKey: { platformKeyId: string } };
    };
    expect(result).toMatchObject({ outcome: 'completed', oldKey: { platformKeyId: ours.id } });
    // The key the orchestrator created itself has its id recorded.
    expect(result.newKey.platformKeyId).toMatch(/\S/);
    // --wait printed the wait as it happened.
    expect(done.stderr).toMatch(/waiting \(naming_old_key\): an operator to name the old key/);
    expect(done.stderr).toMatch(/wait over \(naming_old_key\)/);

    // The other service's key was never touched and its calls never refused; ours is revoked, the new one active.
    const after = new Map(platformKeys().map((k) => [k.id, k]));
    expect(after.get(otherKeyId)!.status).toBe('active');
    expect(after.get(ours.id)!.status).toBe('revoked');
    expect(after.get(result.newKey.platformKeyId)!.status).toBe('active');
    expect(otherService.calls).toBeGreaterThan(10);
    expect(otherService.refused).toBe(0);
    const final = (await asAdmin('GET', '/v1/parent-key')).json as unknown as { data: ParentKeysView };
    expect(final.data.rotation).toBeNull();
    expect(final.data.keys.map((k) => [k.status, k.platformKeyId])).toEqual([
      ['revoked', ours.id],
      ['current', result.newKey.platformKeyId],
    ]);
  }, 300_000);

  it('import --key-id records the id after checking it on the platform', async () => {
    const token = `svpk_sim_DO_NOT_USE_imported_${randomBytes(4).toString('hex')}`;
    const added = await fetch(`${sim.url}/__sim/parents/${DEFAULT_PARENT_ID}/platform-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'handed over', token }),
    });
    const { id } = (await added.json()) as { id: string };
    const importEnv = { ...env, PLATFORM_API_KEY: '' };
    const base = ['parent-key', 'import', '--operator', 'ops', '--reason', 'handed over'];
    const { rows: before } = await ctx.pool.query(`SELECT 1 FROM parent_keys`);
    const typo = await runCli([...base, '--key-id', 'key_nope'], importEnv, 60_000, token);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/key-id: key_nope is not an active key/);
    expect(typo.stderr + typo.stdout).not.toContain(token);
    const blank = await runCli([...base, '--key-id', 'has space'], importEnv, 60_000, token);
    expect(blank.code).toBe(2);
    expect(blank.stderr).toMatch(/key-id: must be a platform key id/);
    const imported = await runCli([...base, '--key-id', id, '--json'], importEnv, 60_000, token);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ imported: true, platformKeyId: id });
    const { rows } = await ctx.pool.query<{ platform_key_id: string; status: string }>(
      `SELECT platform_key_id, status FROM parent_keys ORDER BY id`,
    );
    expect(rows).toHaveLength(before.length + 1);
    expect(rows.at(-1)).toEqual({ platform_key_id: id, status: 'current' });
    // Our key is now known: the platform-keys listing says so and has nothing to name.
    const listed = await runCli(['parent-key', 'platform-keys', '--json'], cli);
    const view = JSON.parse(listed.stdout) as ParentPlatformKeysView;
    expect(view.keys.find((k) => k.id === id)).toMatchObject({ verdict: 'recorded' });
  }, 120_000);
});
