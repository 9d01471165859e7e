import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { checkRecords } from '../../chaos/check/records.js';
import type { Operation } from '../../chaos/driver.js';
import { SMALL_OPTIONS } from '../../chaos/options.js';
import { runChaos } from '../../chaos/run.js';
import { listOpenRotations } from '../../src/db/key-rotations-store.js';
import { cancelRotation, startRotation } from '../../src/client/keys/start-rotation.js';
import { rotationStatusQuery } from '../../workflows/keys/rotate-tenant-key-messages.js';
import { clearFaults, setFaults } from '../harness/onboarding-env.js';
import { createRotationEnv, keysOf, waitFor, type RotationEnv } from '../harness/rotation-env.js';
import type { Pool } from '../../src/db/pool.js';
import type { SimStateSnapshot } from '../../src/sim/index.js';

/**
 * The small chaos run (chaos/): 20 onboardings with rotations and closes mixed in, drop-after-commit
 * on every mutating route, 503 and 429 storms, latency, one SIGKILL of the worker process, Postgres
 * ending the worker's connections and one Postgres restart; then every invariant against Postgres,
 * Temporal and the simulator's books.
 */
describe('chaos (small)', () => {
  it(
    'keeps every invariant when the platform drops responses, storms, the worker is ' + 'killed and Postgres restarts',
    async () => {
      const lines: string[] = [];
      const report = await runChaos({
        ...SMALL_OPTIONS,
        temporalAddress: inject('temporalAddress'),
        temporalNamespace: inject('temporalNamespace'),
        log: (line) => lines.push(line),
      });

      // The chaos really happened: otherwise a green table proves nothing.
      expect(report.chaos.workerKills).toBe(1);
      expect(report.chaos.fired.map((e) => e.name)).toContain('Postgres restart');
      expect(report.chaos.faultsInjected).toBeGreaterThan(0);
      expect(report.operations['onboard completed']).toBe(SMALL_OPTIONS.tenants);

      const broken = report.results
        .filter((r) => r.violations.length > 0)
        .map((r) => ({ invariant: r.name, violations: r.violations.slice(0, 5) }));
      expect(broken, lines.slice(-30).join('\n')).toEqual([]);
      for (const result of report.results.filter((r) => !r.name.startsWith('no run stuck')))
        expect(result.checked, result.name).toBeGreaterThan(0);
    },
    300_000,
  );
});

describe('the chaos checker', () => {
  // A green table is only worth something if the checker sees what it claims to check.
  it('reports a doubled sub-account, a doubled transfer, an orphan key and a missed close', async () => {
    const ref = (n: number) => `chaos-x-000${n}`;
    const tenants = [1, 2, 3].map((n) => ({ external_ref: ref(n), subaccount_id: `sub_${n}`, status: 'active' }));
    const intents = [1, 2, 3].map((n) => ({
      external_ref: ref(n),
      state: 'succeeded',
      amount: '100',
      idempotency_key: `tk-${n}`,
    }));
    const keys = [1, 2, 3].map((n) => ({
      external_ref: ref(n),
      platform_key_id: `key_${n}`,
      status: 'active',
      key_name: `default-g1-a1`,
    }));
    const rows = [tenants, intents, keys];
    const pool = { query: async () => ({ rows: rows.shift() }) } as unknown as Pool;
    const sub = (id: string, n: number, status = 'active') => ({
      id,
      parentId: 'p',
      name: 'x',
      externalRef: ref(n),
      status,
      balanceMicroUsd: '0',
      createdAt: '',
    });
    const transfer = (n: number, key: string) => ({
      id: `txn_${key}`,
      parentId: 'p',
      subaccountId: `sub_${n}`,
      amountMicroUsd: '100',
      idempotencyKey: key,
      createdAt: '',
    });
    const key = (id: string, n: number) => ({
      id,
      kind: 'tenant' as const,
      parentId: 'p',
      subaccountId: `sub_${n}`,
      name: 'default-g1-a1',
      status: 'active' as const,
      createdAt: '',
      revokedAt: null,
      lastUsedAt: null,
    });
    const sim = {
      subaccounts: [sub('sub_1', 1), sub('sub_1b', 1), sub('sub_2', 2), sub('sub_3', 3)],
      transfers: [transfer(1, 'tk-1'), transfer(2, 'tk-2'), transfer(2, 'tk-2-again'), transfer(3, 'tk-3')],
      apiKeys: [key('key_1', 1), key('key_2', 2), key('key_3', 3), key('key_3_orphan', 3)],
    } as unknown as SimStateSnapshot;
    const op = (kind: Operation['kind'], n: number): Operation => ({
      kind,
      externalRef: ref(n),
      workflowId: `${kind}:${ref(n)}`,
      outcome: 'completed',
      accepted: ['completed'],
      detail: null,
    });
    const operations = [op('onboard', 1), op('onboard', 2), op('onboard', 3), op('close', 2)];

    const results = Object.fromEntries(
      (await checkRecords(pool, sim, 'chaos-x-', operations)).map((r) => [r.name, r.violations]),
    );

    expect(results['each tenant created once']!.join('\n')).toContain(ref(1));
    expect(results['each transfer applied once']!.join('\n')).toContain(ref(2));
    expect(results['no orphan key']!.join('\n')).toContain('key_3_orphan');
    expect(results['tenant status as expected']!.join('\n')).toContain(ref(2));
    expect(results['exactly the expected active keys']!.join('\n')).toContain(ref(2));
  });
});

describe('worker database connection (found by chaos)', () => {
  // chaos/probes/transaction-disconnect.ts: Postgres ends the connection a transaction holds. A
  // crash here is the worker dying on every Postgres restart or failover that meets a transaction.
  it('survives Postgres ending the connection of an open transaction', async () => {
    const probe = fileURLToPath(new URL('../../chaos/probes/transaction-disconnect.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', probe, inject('postgresAdminUrl')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, survived: output.includes('survived') }, output.slice(0, 2000)).toEqual({ code: 0, survived: true });
  }, 60_000);
});

describe('a rotation cancelled while it revokes the old key (found by chaos)', () => {
  // The chaos run's close raced a rotation in `revoking_old`: the workflow stopped waiting for the
  // in-flight revoke (activity cancellation TRY_CANCEL), assumed the old key was still there and
  // rolled back. Depending on which lands first, the run fails redeploying a revoked key and leaves
  // its rotation record `running` (the close then waits 10 minutes and fails), or it revokes the
  // new key while the old revoke also lands: no active key at all.
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('chaos-cancel-revoke');
  });
  afterAll(async () => env?.close());

  it('leaves exactly one active key and no open rotation record', async () => {
    const ref = 'cancel-while-revoking';
    const { subaccountId } = await env.onboard(ref);
    // Slow revokes (under the client's 2 s timeout) keep the run in `revoking_old` long enough to cancel it there.
    await setFaults(env.sim, [
      { method: 'POST', path: '/subaccounts/*/api-keys/*/revoke', mode: 'delay', delayMs: 1500 },
    ]);
    try {
      const handle = await startRotation(
        env.client,
        { externalRef: ref, emergency: true },
        { taskQueue: env.taskQueue },
      );
      await waitFor(
        async () => ((await handle.query(rotationStatusQuery)).stage === 'revoking_old' ? true : undefined),
        'the rotation to revoke the old key',
      );
      const settled = await cancelRotation(env.client, ref, 'default');
      // Past the point of no return, a cancel lets the rotation finish rather than roll back.
      expect(settled?.stage).toBe('completed');
    } finally {
      await clearFaults(env.sim);
    }
    const active = keysOf(env, subaccountId).filter((k) => k.status === 'active');
    const open = await listOpenRotations(env.pool, ref);
    expect({ activeKeys: active.length, openRotations: open.map((r) => r.state) }).toEqual({
      activeKeys: 1,
      openRotations: [],
    });
  });
});
