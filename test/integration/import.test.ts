import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplyOutcome } from '../../src/client/imports/import-apply.js';
import type { ImportPlan } from '../../src/client/imports/import-plan.js';
import { listFindings } from '../../src/db/drift-findings-store.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import { runCli } from '../harness/cli.js';
import { keepUsing, waitFor } from '../harness/rotation-env.js';
import type { AdoptTenantKeysResult } from '../../src/domain/import-input.js';
import { adoptionStatusQuery } from '../../workflows/keys/adopt-tenant-keys-messages.js';
import { createRotationEnv, type RotationEnv } from '../harness/rotation-env.js';
import { startOperatorGateway, type OperatorGateway } from '../harness/operator-gateway.js';
import { createDriftListClient } from '../../activities/drift/paced-fetch.js';
import { DEFAULT_PLATFORM_KEY } from '../../src/sim/index.js';
import { generateOperator } from '../../src/secrets/operators.js';

// An operator may import (imports.manage); a backend may not.
const oncall = generateOperator('oncall-imp', 'operator');
const backend = generateOperator('backend-imp', 'backend');
import { seedBehindOurBack, writeMap, type ImportWorld } from '../harness/import-world.js';
import { failureTypeOf, workflowExists } from '../harness/onboarding-checks.js';
import type { importTenant } from '../../workflows/import-tenant.js';
import type { reconcileFleet } from '../../workflows/reconcile-fleet.js';

/**
 * Issue 19: fifty sub-accounts made behind the orchestrator's back are planned, imported exactly
 * where importable, once, through `tenantctl import` as an operator runs it; drift then knows them.
 * The contract does not show the list's or the key records' shapes: run on two platforms.
 */
describe.each(['default', 'alt'] as const)('import against the %s platform shape', (shape) => {
  const s = `${shape.slice(0, 3)}${randomBytes(3).toString('hex')}`;
  let env: RotationEnv;
  let world: ImportWorld;
  let cliEnv: Record<string, string>;
  let gateway: OperatorGateway;

  const count = async (sql: string, params: unknown[] = []) =>
    (await env.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0]!.n;
  const footprint = async () => ({
    tenants: await count('tenants'),
    keys: await count('tenant_keys'),
    intents: await count('transfer_intents'),
    imports: await count('tenant_imports'),
    audit: await count('audit_log'),
  });

  beforeAll(async () => {
    env = await createRotationEnv(`import-${shape}`, { choices: SIM_SHAPES[shape] });
    await env.onboard(`${s}-own`);
    world = await seedBehindOurBack(env.sim, env.platform, s, `${s}-own`);
    // The gateway lists the platform with the parent key, paced under the fleet budget (a generous one keeps the
    // test short); tenantctl holds only the gateway's URL and an operator's token.
    gateway = await startOperatorGateway(
      { ...env, secretsKeys: env.cliEnv.SECRETS_KEYS! },
      {
        entries: [oncall.entry, backend.entry],
        gateway: {
          importLister: createDriftListClient({
            baseUrl: env.sim.apiBase,
            platformKey: DEFAULT_PLATFORM_KEY,
            timeoutMs: 10_000,
            requestsPerSecond: 400,
          }),
        },
      },
    );
    cliEnv = { TENANTCTL_GATEWAY_URL: gateway.url, TENANTCTL_OPERATOR_TOKEN: oncall.token };
  });
  afterAll(async () => {
    await gateway?.close();
    await env?.close();
  });

  it('plans each sub-account without a record, names every conflict, and writes nothing', async () => {
    const before = await footprint();
    const result = await runCli(['import', 'plan', '--json', '--map', world.mapFile], cliEnv, 120_000);
    expect(result.code, result.stderr).toBe(0);
    const plan = JSON.parse(result.stdout) as ImportPlan;
    expect(plan).toMatchObject({ listed: 51, recorded: 1, importable: 45 });
    expect(plan.rows).toHaveLength(50);
    const row = (id: string) => plan.rows.find((r) => r.subaccountId === id)!;
    for (let i = 0; i < 40; i += 1) {
      const ref = world.imp(i);
      const keys = world.keysByRef[ref] ?? [];
      const r = row(world.ids[ref]!);
      expect(r, ref).toMatchObject({
        externalRef: ref,
        refSource: 'platform',
        importable: true,
        status: world.suspendedRefs.includes(ref) ? 'suspended' : 'operating',
        balanceMicroUsd: world.fundedRefs[ref] ?? '0',
        projects: world.suspendedRefs.includes(ref) ? null : 0,
      });
      expect(r.activeKeys!.map((k) => [k.id, k.lastUsedAt !== null]).sort(), ref).toEqual(
        keys.map((k) => [k.id, k.used]).sort(),
      );
    }
    for (const [i, ref] of world.mappedRefs.entries())
      expect(row(world.noRefIds[i]!)).toMatchObject({ externalRef: ref, refSource: 'map', importable: true });
    for (const id of world.noRefIds.slice(5)) expect(row(id).conflicts.map((c) => c.code)).toEqual(['no_ref']);
    expect(row(world.ownStrayId).conflicts.map((c) => c.code)).toEqual(['ref_ours']);
    for (const id of world.twinIds) expect(row(id).conflicts.map((c) => c.code)).toEqual(['ref_duplicate']);
    expect(await footprint()).toEqual(before);

    const text = await runCli(['import', 'plan', '--map', world.mapFile], cliEnv, 120_000);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /51 live sub-account\(s\) listed, 1 already in our records, 50 without a record: 45 importable/,
    );
    expect(text.stdout).toContain(`conflict ref_duplicate: 2 sub-accounts on the platform carry ref ${world.twinRef}`);
  });

  it(
    'refuses an unknown --only ref, a malformed mapping and a colliding one with one ' + 'clear error, writing nothing',
    async () => {
      const before = await footprint();
      const cases: Array<[string[], RegExp]> = [
        [
          ['--only', `${s}-nosuch`],
          new RegExp(`^error: --only ${s}-nosuch: no sub-account without a record carries this ref`),
        ],
        [['--only', world.twinRef], new RegExp(`^error: --only ${world.twinRef}: not importable \\(2 sub-accounts`)],
        [
          ['--map', writeMap(s, 'malformed', `${world.noRefIds[0]},${s}-a,extra`)],
          /^error: --map \S+ line 1: expected 2 fields "subaccountId,externalRef", found 3$/,
        ],
        [
          ['--map', writeMap(s, 'collides', `${world.noRefIds[0]},${world.imp(7)}`)],
          new RegExp(
            `^error: --map line 1: externalRef ${world.imp(7)} collides with sub-account ${world.ids[world.imp(7)]}`,
          ),
        ],
      ];
      for (const [args, message] of cases) {
        const result = await runCli(['import', 'apply', ...args], cliEnv, 120_000);
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stderr.trim()).toMatch(message);
      }
      // A backend's token is refused both routes (403), whatever it sends.
      for (const path of ['/v1/imports/plan', '/v1/imports/apply']) {
        const refused = await fetch(`${gateway.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${backend.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ only: [world.imp(0)] }),
        });
        expect(refused.status, path).toBe(403);
      }
      expect(await footprint()).toEqual(before);
      expect(await workflowExists(env.client, `import:${world.imp(0)}`)).toBe(false);
    },
  );

  it('imports exactly the importable ones, recorded like onboarding, and a second apply is a no-op', async () => {
    const one = await runCli(['import', 'apply', '--only', world.imp(0), '--json'], cliEnv, 120_000);
    expect(one.code, one.stderr).toBe(0);
    expect((JSON.parse(one.stdout) as ApplyOutcome).results).toMatchObject([
      {
        ok: true,
        externalRef: world.imp(0),
        outcome: 'imported',
        unmanagedKeys: [world.keysByRef[world.imp(0)]![0]!.id],
      },
    ]);

    const all = await runCli(['import', 'apply', '--map', world.mapFile, '--json'], cliEnv, 300_000);
    expect(all.code, all.stderr).toBe(0);
    const outcome = JSON.parse(all.stdout) as ApplyOutcome;
    expect(outcome.results).toHaveLength(44);
    expect(outcome.results.every((r) => r.ok && r.outcome === 'imported')).toBe(true);
    expect(outcome.skipped.map((r) => r.subaccountId).sort()).toEqual(
      [world.ownStrayId, ...world.twinIds, ...world.noRefIds.slice(5)].sort(),
    );

    // Ownership exactly as onboarding records it: the ref, the sub-account, the status.
    const { rows: tenants } = await env.pool.query<{ ref: string; sub: string; status: string }>(
      `SELECT t.external_ref AS ref, t.subaccount_id AS sub, t.status FROM tenants t ` +
        `JOIN tenant_imports i USING (external_ref)`,
    );
    const expected = [...Array.from({ length: 40 }, (_, i) => world.imp(i)), ...world.mappedRefs];
    expect(tenants.map((t) => t.ref).sort()).toEqual(expected.sort());
    for (const t of tenants) {
      expect(t.sub).toBe(world.ids[t.ref]);
      expect(t.status).toBe(world.suspendedRefs.includes(t.ref) ? 'suspended' : 'active');
    }
    const { rows: keys } = await env.pool.query<{ ref: string; id: string; status: string }>(
      `SELECT external_ref AS ref, platform_key_id AS id, status FROM tenant_keys WHERE key_name LIKE 'imported-%'`,
    );
    expect(keys.map((k) => [k.ref, k.id, k.status]).sort()).toEqual(
      Object.entries(world.keysByRef)
        .flatMap(([ref, ks]) => ks.map((k) => [ref, k.id, 'unmanaged']))
        .sort(),
    );
    const { rows: opening } = await env.pool.query<{ ref: string; amount: string }>(
      `SELECT external_ref AS ref, amount_micro_usd::text AS amount FROM ` +
        `transfer_intents WHERE kind = 'opening' AND state = 'succeeded'`,
    );
    expect(Object.fromEntries(opening.map((o) => [o.ref, o.amount]))).toEqual(world.fundedRefs);
    expect(await count(`audit_log WHERE action = 'tenant.imported'`)).toBe(45);
    // Recorded under the token's name (no --operator any more).
    expect(await count(`audit_log WHERE action = 'tenant.imported' AND actor = 'operator:oncall-imp'`)).toBe(45);
    expect(await count(`audit_log WHERE action = 'key.recorded_unmanaged'`)).toBe(keys.length);

    const before = await footprint();
    const again = await runCli(['import', 'apply', '--map', world.mapFile], cliEnv, 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^nothing to import \(5 skipped for conflicts/);
    expect(await footprint()).toEqual(before);
  });

  it(
    'an import started by hand for a ref that is ours, or one the sub-account does ' +
      'not carry, fails and writes nothing',
    async () => {
      const before = await footprint();
      const start = (externalRef: string, subaccountId: string) =>
        env.client.workflow.execute<typeof importTenant>('importTenant', {
          taskQueue: env.taskQueue,
          workflowId: `import:${externalRef}`,
          args: [{ externalRef, subaccountId, name: 'By hand', refSource: 'platform' }],
        });
      const ours = await start(`${s}-own`, world.ownStrayId).catch((error: unknown) => error);
      expect(failureTypeOf(ours)).toBe('EXTERNAL_REF_CONFLICT');
      const notCarried = await start(`${s}-not-carried`, world.twinIds[0]!).catch((error: unknown) => error);
      expect(failureTypeOf(notCarried)).toBe('EXTERNAL_REF_CONFLICT');
      expect(await footprint()).toEqual(before);
    },
  );

  it('drift no longer reports imported sub-accounts and reports their keys as unmanaged, not orphans', async () => {
    const result = await env.client.workflow.execute<typeof reconcileFleet>('reconcileFleet', {
      taskQueue: env.taskQueue,
      workflowId: `drift-import-${s}`,
      args: [{}],
    });
    expect(result.totals.failed).toBe(0);
    const open = await listFindings(env.pool, { openOnly: true });
    const imported = new Set(Object.values(world.ids));
    const unrecorded = open.filter((f) => f.kind === 'subaccount_unrecorded').map((f) => f.subject);
    expect(unrecorded.filter((id) => imported.has(id))).toEqual([]);
    expect(unrecorded.sort()).toEqual([...world.twinIds, ...world.noRefIds.slice(5)].sort());
    const allKeys = Object.values(world.keysByRef).flatMap((ks) => ks.map((k) => k.id));
    expect(
      open
        .filter((f) => f.kind === 'key_unmanaged')
        .map((f) => f.subject)
        .sort(),
    ).toEqual(allKeys.sort());
    expect(open.filter((f) => f.kind === 'key_orphan')).toEqual([]);
    expect(open.filter((f) => f.kind === 'balance_unexplained')).toEqual([]);
  });

  const TIMINGS = ['--quiet-period', '1s', '--propagation-allowance', '1s', '--poll-interval', '300ms'];
  const platformKeys = async (ref: string) =>
    Object.fromEntries(
      (await env.platform.listTenantKeys({ subaccountId: world.ids[ref]! })).keys.map((k) => [k.id, k.status]),
    );
  const recordOf = async (keyId: string) =>
    (
      await env.pool.query<{ status: string }>(`SELECT status FROM tenant_keys WHERE platform_key_id = $1::text`, [
        keyId,
      ])
    ).rows[0]?.status;

  it('adopt-rotation issues a managed key, deploys it and revokes a quiet unmanaged key', async () => {
    const ref = world.imp(0);
    const [old] = world.keysByRef[ref]!;
    const plain = await runCli(['rotate-key', ref], env.cliEnv);
    expect(plain.code).toBe(1);
    expect(plain.stderr.trim()).toMatch(/has only unmanaged \(imported\) keys in slot default: rotate it with --adopt/);
    expect(await workflowExists(env.client, `rotate:${ref}:default`)).toBe(false);
    const result = await runCli(['rotate-key', ref, '--adopt', ...TIMINGS, '--wait', '--json'], env.cliEnv, 120_000);
    expect(result.code, result.stderr).toBe(0);
    const { result: adopted } = JSON.parse(result.stdout) as { result: AdoptTenantKeysResult };
    expect(adopted).toMatchObject({ outcome: 'completed', revoked: [old!.id], kept: [] });
    expect(await platformKeys(ref)).toEqual({ [old!.id]: 'revoked', [adopted.keyId]: 'active' });
    expect(await recordOf(old!.id)).toBe('revoked');
    expect(await recordOf(adopted.keyId)).toBe('active');
    expect(env.notify.received.some((n) => n.signatureValid && n.body.includes(adopted.keyId))).toBe(true);
  });

  it(
    'adopt-rotation holds an unmanaged key still in use, revokes only the quiet one, ' +
      'and finishes once it is quiet',
    async () => {
      const ref = world.imp(2);
      const [web, batch] = world.keysByRef[ref]!;
      const consumer = keepUsing(env, web!.token, 150);
      try {
        const started = await runCli(
          ['rotate-key', ref, '--adopt', ...TIMINGS, '--quiet-deadline', '5s'],
          env.cliEnv,
          120_000,
        );
        expect(started.code, started.stderr).toBe(0);
        const handle = env.client.workflow.getHandle(`rotate:${ref}:default`);
        const held = await waitFor(async () => {
          const status = await handle.query(adoptionStatusQuery).catch(() => undefined);
          return status?.stage === 'held' ? status : undefined;
        }, 'the adoption to hold');
        expect(held.keys.map((k) => [k.keyId, k.state])).toEqual([
          [web!.id, 'held'],
          [batch!.id, 'revoked'],
        ]);
        const keys = await platformKeys(ref);
        expect([keys[web!.id], keys[batch!.id]]).toEqual(['active', 'revoked']);
        expect([await recordOf(web!.id), await recordOf(batch!.id)]).toEqual(['unmanaged', 'revoked']);

        const abort = await runCli(['rotation', 'abort', ref, '--reason', 'the web tier still uses it'], env.cliEnv);
        expect(abort.code, abort.stderr).toBe(0);
        expect(await handle.result()).toMatchObject({ outcome: 'aborted', revoked: [batch!.id], kept: [web!.id] });
      } finally {
        await consumer.stop();
      }
      expect((await platformKeys(ref))[web!.id]).toBe('active');

      // The consumer moved to the managed key: a second adoption revokes the old key, issuing nothing new.
      const again = await runCli(['rotate-key', ref, '--adopt', ...TIMINGS, '--wait', '--json'], env.cliEnv, 120_000);
      expect(again.code, again.stderr).toBe(0);
      expect((JSON.parse(again.stdout) as { result: AdoptTenantKeysResult }).result).toMatchObject({
        outcome: 'completed',
        revoked: [web!.id],
      });
      const active = Object.entries(await platformKeys(ref)).filter(([, st]) => st === 'active');
      expect(active).toHaveLength(1);
      expect(await recordOf(active[0]![0])).toBe('active');

      const none = await runCli(['rotate-key', ref, '--adopt'], env.cliEnv);
      expect(none.code).toBe(2);
      expect(none.stderr.trim()).toMatch(/^error: --adopt: tenant \S+ has no unmanaged key in slot default/);
    },
  );

  it('the fleet adoption schedule adopts every remaining imported tenant once its keys are quiet', async () => {
    const unmanaged = async () =>
      (
        await env.pool.query<{ ref: string; id: string }>(
          `SELECT k.external_ref AS ref, k.platform_key_id AS id FROM tenant_keys k JOIN tenants t USING (external_ref)
            WHERE k.status = 'unmanaged' AND t.status = 'active' ORDER BY 1`,
        )
      ).rows;
    const before = await unmanaged();
    expect(before.length).toBeGreaterThan(0);
    const made = await runCli(
      ['rotation', 'schedule', '--fleet', '--adopt', '--every', '30d', '--concurrency', '4', ...TIMINGS],
      env.cliEnv,
    );
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/schedule rotation-fleet:default:adopt: every 30d/);
    try {
      const now = await runCli(['rotation', 'run-now', '--fleet', '--adopt'], env.cliEnv);
      expect(now.code, now.stderr).toBe(0);
      await waitFor(
        async () => ((await unmanaged()).length === 0 ? true : undefined),
        'every unmanaged key adopted',
        90_000,
      );
    } finally {
      await runCli(['rotation', 'delete', '--fleet', '--adopt'], env.cliEnv);
    }
    for (const { ref, id } of before) {
      const keys = await platformKeys(ref);
      expect(keys[id], `${ref} ${id}`).toBe('revoked');
      expect(
        Object.values(keys).filter((st) => st === 'active'),
        ref,
      ).toHaveLength(1);
    }
  });
});
