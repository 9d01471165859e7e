import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { insertCreatingParentKey } from '../../src/db/parent-keys-store.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertTenantIfAbsent, recordSubaccount, setTenantStatus } from '../../src/db/tenants-store.js';
import { FailureCode } from '../../src/domain/failures.js';
import { TenantStatus } from '../../src/domain/tenant-rules.js';
import { createLogger } from '../../src/infra/log.js';
import {
  createPlatformClient,
  PlatformBusinessStateError,
  PlatformErrorCode,
  type PlatformClient,
} from '../../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { tenantTokenAad } from '../../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY, startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import type { SimChoices } from '../../src/sim/choices.js';
import { barrier, gatedPlatform, onCall, type Gates } from '../harness/gated-platform.js';
import { createTestContext, type TestContext } from '../harness/context.js';

/**
 * Issue 44: Temporal runs a step at least once, and two attempts of one step can run AT THE SAME TIME (a local
 * activity attempt that outlived its workflow task, an activity whose worker was cut off). Each test runs two
 * attempts of the same step against real Postgres and the simulator, each on a platform client the test can hold
 * (test/harness/gated-platform.ts), in the interleavings that matter: a create whose response is still in flight
 * while a sibling sweeps and stores; a stored key a sibling's sweep meets before it is verified; two sends of one
 * transfer while one is refused. Whatever the order, one key is active, it is the one recorded, and it works;
 * no transfer moves twice; an attempt that lost ends in a typed failure, never a TypeError.
 */
describe('two attempts of one step at once', () => {
  let ctx: TestContext;
  let sim: RunningSimulator;
  let pool: Pool;
  const vault = createVault(parseMasterKeys(generateMasterKey('overlap')));
  const platform = () => createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
  const FAST_PROOF = { retryDelaysMs: [20, 20, 20], maxRejectedKeys: 3 };
  /** One attempt: the production activities over a platform client whose calls the test holds. */
  const attempt = (gates: Gates = {}, client: PlatformClient = platform()) =>
    createActivities({
      pool,
      platform: gatedPlatform(client, gates),
      vault,
      logger: createLogger({ level: 'silent' }),
      keyProof: FAST_PROOF,
    });

  beforeAll(async () => {
    ctx = await createTestContext('overlapping-attempts');
    sim = await startSimulator();
    pool = createPool(ctx.databaseUrl, { max: 6 });
  });
  afterAll(async () => {
    await pool?.end();
    await sim?.close();
    await ctx?.close();
  });

  async function tenant(externalRef: string, client: PlatformClient = platform()) {
    await insertTenantIfAbsent(ctx.pool, { externalRef, name: externalRef, createIdempotencyKey: `c-${externalRef}` });
    const { subaccount } = await client.createSubaccount({
      name: externalRef,
      externalRef,
      idempotencyKey: `c-${externalRef}`,
    });
    await recordSubaccount(ctx.pool, externalRef, subaccount.id);
    await setTenantStatus(ctx.pool, externalRef, TenantStatus.created);
    return subaccount.id;
  }
  /** An earlier attempt (1) that claimed the record, and whose create reached the platform with its answer lost. */
  async function lostFirstAttempt(externalRef: string, subaccountId: string) {
    await ctx.pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
       VALUES ($1, 'default', 1, 'tpo-default-g1-a1', 'creating', 1)`,
      [externalRef],
    );
    await platform().createTenantKey({ subaccountId, name: 'tpo-default-g1-a1' });
  }
  const record = async (externalRef: string) =>
    (
      await ctx.pool.query<{
        status: string;
        platformKeyId: string | null;
        verified: boolean;
        rejectedKeys: number;
        sealed: string | null;
      }>(
        `SELECT status, platform_key_id AS "platformKeyId", verified_at IS NOT NULL AS verified,
                rejected_keys AS "rejectedKeys", (SELECT sealed FROM key_secrets WHERE tenant_key_id = k.id) AS sealed
           FROM tenant_keys k WHERE external_ref = $1 AND slot = 'default' AND generation = 1`,
        [externalRef],
      )
    ).rows[0]!;
  const activeKeys = async (subaccountId: string) =>
    (await platform().listTenantKeys({ subaccountId })).keys.filter((k) => k.status !== 'revoked');

  /** The invariant after any interleaving: one active key on the platform, the recorded one, and its sealed copy works. */
  async function oneWorkingKey(externalRef: string, subaccountId: string): Promise<string> {
    const row = await record(externalRef);
    expect(row.status).toBe('active');
    const active = await activeKeys(subaccountId);
    expect(active.map((k) => k.id)).toEqual([row.platformKeyId]);
    const token = vault.open(row.sealed!, tenantTokenAad({ externalRef, keyId: row.platformKeyId! }));
    await expect(platform().listProjects({ auth: { kind: 'tenant-key', token } })).resolves.toBeDefined();
    return row.platformKeyId!;
  }
  const typeOf = async (promise: Promise<unknown>) =>
    promise.then(
      () => 'resolved',
      (error: unknown) => (error instanceof ApplicationFailure ? error.type : `not typed: ${String(error)}`),
    );

  it('create lost in flight -> a sibling sweeps, creates and stores -> the first answer arrives: it stores nothing and answers with the stored key', async () => {
    const ref = 'ov-inflight';
    const subaccountId = await tenant(ref);
    await lostFirstAttempt(ref, subaccountId);
    const held = barrier();
    const first = attempt({ after: { createTenantKey: held.hook } });
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 1 };
    const slow = first.issueAndVerifyTenantKey(input);
    await held.reached; // attempt 2's key exists on the platform; its answer is in flight
    const sibling = await attempt().issueAndVerifyTenantKey(input);
    expect(sibling).toMatchObject({ state: 'issued', verified: true });
    held.open();
    // The slow attempt's store is fenced; it answers with the key the record holds, verified (not its own, revoked).
    await expect(slow).resolves.toMatchObject({
      state: 'issued',
      verified: true,
      keyId: (sibling as { keyId: string }).keyId,
    });
    expect(await oneWorkingKey(ref, subaccountId)).toBe((sibling as { keyId: string }).keyId);
  });

  it('a sibling sweeps while this attempt stores and verifies: the older attempt is fenced (typed failure), the newer one stores a key that works', async () => {
    const ref = 'ov-sweep-verify';
    const subaccountId = await tenant(ref);
    await lostFirstAttempt(ref, subaccountId);
    const afterCreate = barrier();
    const beforeProof = barrier();
    const first = attempt({ after: { createTenantKey: afterCreate.hook }, before: { listProjects: beforeProof.hook } });
    const beforeSweep = barrier();
    const second = attempt({ before: { listTenantKeys: onCall(1, beforeSweep.hook) } });
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 1 };
    const a = first.issueAndVerifyTenantKey(input);
    await afterCreate.reached; // attempt 2 created its key; its answer not yet seen
    const b = second.issueAndVerifyTenantKey(input);
    await beforeSweep.reached; // attempt 3 has claimed, about to sweep
    afterCreate.open(); // attempt 2 stores (or is refused) ...
    await Promise.race([beforeProof.reached, a.catch(() => undefined)]);
    beforeSweep.open(); // ... attempt 3 sweeps, creates, stores, verifies
    const bOutcome = await b.then(
      (r) => r,
      (error: unknown) => error,
    );
    beforeProof.open(); // attempt 2 would now verify the key it stored
    expect(await typeOf(a)).toBe(FailureCode.KEY_ATTEMPT_SUPERSEDED);
    expect(bOutcome).toMatchObject({ state: 'issued', verified: true });
    const keyId = await oneWorkingKey(ref, subaccountId);
    // The workflow's next attempt finds the stored key and verifies it: nothing new.
    await expect(attempt().issueAndVerifyTenantKey(input)).resolves.toMatchObject({ keyId, verified: true });
    expect(await activeKeys(subaccountId)).toHaveLength(1);
  });

  it('a sibling stores while this attempt sweeps: the sweep never revokes the stored key, and no TypeError', async () => {
    const ref = 'ov-stored-first';
    const subaccountId = await tenant(ref);
    await ctx.pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, status, create_attempts)
       VALUES ($1, 'default', 1, 'tpo-default-g1-a1', 'creating', 1)`,
      [ref],
    );
    const beforeSweep = barrier();
    const first = attempt({ before: { listTenantKeys: onCall(1, beforeSweep.hook) } });
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 1 };
    const a = first.issueAndVerifyTenantKey(input);
    await beforeSweep.reached;
    const b = await attempt().issueAndVerifyTenantKey(input);
    expect(b).toMatchObject({ state: 'issued', verified: true });
    beforeSweep.open();
    await expect(a).resolves.toMatchObject({ state: 'issued', verified: true, keyId: (b as { keyId: string }).keyId });
    expect(await oneWorkingKey(ref, subaccountId)).toBe((b as { keyId: string }).keyId);
  });

  it('an attempt fenced by a sibling never uses the key: the sibling proves it, a frozen loser cannot use it late', async () => {
    const ref = 'ov-no-late-use';
    const subaccountId = await tenant(ref);
    await lostFirstAttempt(ref, subaccountId);
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 1 };
    let loserUses = 0;
    const afterCreate = barrier();
    const loser = attempt({
      after: { createTenantKey: afterCreate.hook },
      before: {
        listProjects: ([args]) => {
          if ((args as { auth?: { kind: string } }).auth?.kind === 'tenant-key') loserUses += 1;
        },
      },
    });
    const a = loser.issueAndVerifyTenantKey(input);
    await afterCreate.reached; // attempt 2's create answered; it has not stored yet
    const beforeProof = barrier();
    const b = attempt({ before: { listProjects: onCall(1, beforeProof.hook) } }).issueAndVerifyTenantKey(input);
    await beforeProof.reached; // attempt 3 claimed, swept attempt 2's key, created and stored its own
    afterCreate.open(); // attempt 2 wakes: fenced, it revokes its own key and must not prove attempt 3's
    expect(await typeOf(a)).toBe(FailureCode.KEY_ATTEMPT_SUPERSEDED);
    expect(loserUses).toBe(0);
    beforeProof.open();
    await expect(b).resolves.toMatchObject({ state: 'issued', verified: true });
    await oneWorkingKey(ref, subaccountId);
    // Woken again after the sibling verified (the workflow has moved on): an answer, and still no use of the key.
    await expect(loser.issueAndVerifyTenantKey(input)).resolves.toMatchObject({ verified: true });
    expect(loserUses).toBe(0);
  });

  it("a rotation's verify-and-look beside a sibling's: both prove the key and look, it is verified once, it works", async () => {
    const ref = 'ov-verify-look';
    const subaccountId = await tenant(ref);
    const key = { externalRef: ref, slot: 'default', generation: 1 };
    await expect(attempt().issueTenantKey({ ...key, subaccountId })).resolves.toMatchObject({ state: 'issued' });
    const { platformKeyId } = await record(ref);
    const input = { ...key, subaccountId, keyIds: [platformKeyId!] };
    const beforeProof = barrier();
    const a = attempt({ before: { listProjects: onCall(1, beforeProof.hook) } }).verifyKeyAndObserveUsage(input);
    await beforeProof.reached; // attempt 1 is about to prove the key; attempt 2 proves and looks meanwhile
    const b = await attempt().verifyKeyAndObserveUsage(input);
    beforeProof.open();
    for (const usage of [b, await a]) expect(usage[platformKeyId!]).toMatchObject({ status: 'active' });
    expect((await record(ref)).verified).toBe(true);
    const audited = await ctx.pool.query(
      `SELECT 1 FROM audit_log WHERE external_ref = $1 AND action = 'key.verified'`,
      [ref],
    );
    expect(audited.rowCount).toBe(1);
    await oneWorkingKey(ref, subaccountId);
  });

  it('a new key refused at its first use while it propagates: the proof is retried, the key kept', async () => {
    const ref = 'ov-propagating';
    const subaccountId = await tenant(ref);
    let refusals = 2;
    // A 401 is a definite refusal on the wire; the client's own class for it is what the proof looks for.
    const unauthenticated = await platform()
      .listProjects({ auth: { kind: 'tenant-key', token: 'svsk_not_a_real_token_0000000000000000' } })
      .catch((error: unknown) => error);
    const proofGates = attempt({
      before: {
        listProjects: ([args]) => {
          const auth = (args as { auth?: { kind: string } }).auth;
          if (auth?.kind === 'tenant-key' && refusals-- > 0) throw unauthenticated;
        },
      },
    });
    const result = await proofGates.issueAndVerifyTenantKey({
      externalRef: ref,
      subaccountId,
      slot: 'default',
      generation: 1,
    });
    expect(result).toMatchObject({ state: 'issued', verified: true });
    expect(refusals).toBeLessThan(0);
    expect((await record(ref)).rejectedKeys).toBe(0);
    await oneWorkingKey(ref, subaccountId);
  });

  it('a new key revoked before its first use: rejected and revoked, the next attempt issues another that works; past the bound, final', async () => {
    const ref = 'ov-rejected';
    const subaccountId = await tenant(ref);
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 1 };
    // Something revokes each new key the moment it is made (a platform that will not accept it).
    const revokeEachNew = attempt({
      after: {
        createTenantKey: async () => {
          for (const key of await activeKeys(subaccountId))
            await platform().revokeTenantKey({ subaccountId, keyId: key.id });
        },
      },
    });
    const failure = (await revokeEachNew.issueAndVerifyTenantKey(input).catch((e: unknown) => e)) as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(FailureCode.KEY_REJECTED);
    expect(failure.nonRetryable).toBe(false);
    expect(await record(ref)).toMatchObject({ status: 'creating', platformKeyId: null, rejectedKeys: 1, sealed: null });
    // The retry issues the next attempt's key, which works.
    await expect(attempt().issueAndVerifyTenantKey(input)).resolves.toMatchObject({ state: 'issued', verified: true });
    await oneWorkingKey(ref, subaccountId);

    const bound = 'ov-rejected-bound';
    const boundSub = await tenant(bound);
    const boundInput = { externalRef: bound, subaccountId: boundSub, slot: 'default', generation: 1 };
    const revokeAll = attempt({
      after: {
        createTenantKey: async () => {
          for (const key of await activeKeys(boundSub))
            await platform().revokeTenantKey({ subaccountId: boundSub, keyId: key.id });
        },
      },
    });
    const outcomes: ApplicationFailure[] = [];
    for (let i = 0; i < 3; i++)
      outcomes.push(
        (await revokeAll.issueAndVerifyTenantKey(boundInput).catch((e: unknown) => e)) as ApplicationFailure,
      );
    expect(outcomes.map((o) => [o.type, o.nonRetryable])).toEqual([
      [FailureCode.KEY_REJECTED, false],
      [FailureCode.KEY_REJECTED, false],
      [FailureCode.KEY_REJECTED, true],
    ]);
    expect(await activeKeys(boundSub)).toEqual([]);
    expect((await record(bound)).rejectedKeys).toBe(3);
  });

  it("a rotation's roll-back beside its generation's create still in flight: no key of that generation stays active", async () => {
    const ref = 'ov-rollback';
    const subaccountId = await tenant(ref);
    await setTenantStatus(ctx.pool, ref, TenantStatus.active);
    const old = await attempt().issueAndVerifyTenantKey({
      externalRef: ref,
      subaccountId,
      slot: 'default',
      generation: 1,
    });
    const beforeCreate = barrier();
    const input = { externalRef: ref, subaccountId, slot: 'default', generation: 2 };
    // Generation 2's create has claimed its record; its request is not yet out.
    const create = attempt({ before: { createTenantKey: beforeCreate.hook } }).issueTenantKey(input);
    await beforeCreate.reached;
    // The roll-back lists the platform's keys (none of generation 2 yet) and is held there ...
    const listed = barrier();
    const rollBack = attempt({ after: { listTenantKeys: listed.hook } }).revokeNewGeneration({
      ...input,
      rotationId: 'rot-overlap',
      oldGeneration: 1,
      why: 'aborted while the create ran',
    });
    await listed.reached;
    // ... while the create's key lands and the create tries to store it.
    beforeCreate.open();
    const created = await typeOf(create);
    listed.open();
    expect((await rollBack).refused).toBe(false);
    // The create was refused its store (the roll-back failed the record first) and revoked its own key.
    expect(created).toBe(FailureCode.KEY_RECORD_STATE);
    expect((await activeKeys(subaccountId)).map((k) => k.id)).toEqual([(old as { keyId: string }).keyId]);
  });

  it("the parent key's create: a sibling creates and stores while the first answer is in flight; the first answers with the stored key", async () => {
    const runKey = `overlap-${Date.now()}`;
    const row = await insertCreatingParentKey(pool, `orchestrator-${runKey}`);
    const input = { rowId: row.id, keyName: `orchestrator-${runKey}` };
    const held = barrier();
    const slow = attempt({ after: { createPlatformKey: held.hook } }).createParentKeyOnPlatform(input);
    await held.reached;
    const sibling = await attempt().createParentKeyOnPlatform(input);
    held.open();
    const first = await slow;
    expect(sibling.state).toBe('created');
    expect(first).toEqual(sibling);
    const stored = await ctx.pool.query<{ id: string }>(`SELECT platform_key_id AS id FROM parent_keys WHERE id = $1`, [
      row.id,
    ]);
    const mine = (await platform().listPlatformKeys({})).keys.filter(
      (k) => k.name?.startsWith(input.keyName) && k.status !== 'revoked',
    );
    expect(mine.map((k) => k.id)).toEqual([stored.rows[0]!.id]);
  });

  it("two attempts write one transfer's intent at the same moment: neither fails on the key's index, one transfer", async () => {
    const ref = 'ov-intent-race';
    const subaccountId = await tenant(ref);
    const [a, b] = [attempt(), attempt()];
    // ON CONFLICT arbitrates the purpose only: the same row inserted by both at once met the key's unique index
    // (the fresh-clone CI at 0406908 failed on it). Each round is a new intent, both attempts at once.
    const rounds = 150;
    for (let round = 0; round < rounds; round += 1) {
      const input = { externalRef: ref, subaccountId, amountMicroUsd: '1000', purpose: `race-${round}` };
      const outcomes = await Promise.all([a.fundWallet(input), b.fundWallet(input)]);
      expect(outcomes.map((o) => o.state)).toContain('succeeded');
    }
    expect(sim.state().transfers.filter((t) => t.subaccountId === subaccountId)).toHaveLength(rounds);
  });

  describe.each<[string, Partial<SimChoices>]>([
    ['successes replayed, refusals not recorded', {}],
    ['replays answered 409, refusals recorded', { replay: 'conflict', recordRefusals: true } as Partial<SimChoices>],
  ])('transfer intents (%s)', (_shape, choices) => {
    let shaped: RunningSimulator;
    beforeAll(async () => {
      shaped = await startSimulator({ choices });
    });
    afterAll(async () => shaped?.close());

    it('a send refused while a sibling send under the same key is in flight keeps the key: one transfer moves', async () => {
      const client = () => createPlatformClient({ baseUrl: shaped.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
      const ref = `ov-xfer-${Object.keys(choices).length}`;
      const subaccountId = await tenant(ref, client());
      const input = { externalRef: ref, subaccountId, amountMicroUsd: '1000000', purpose: 'initial-funding' };
      const inFlight = barrier();
      const a = attempt({ before: { transfer: inFlight.hook } }, client()).fundWallet(input);
      await inFlight.reached; // attempt A has claimed its send under the first key; its request not yet out
      // Attempt B, at the same time, is refused for the parent's balance (nothing moved).
      const refused = attempt(
        {
          instead: {
            transfer: () =>
              Promise.reject(
                new PlatformBusinessStateError({ code: PlatformErrorCode.INSUFFICIENT_BALANCE, message: 'refused' }),
              ),
          },
        },
        client(),
      );
      await expect(refused.fundWallet(input)).resolves.toMatchObject({ state: 'insufficient_balance' });
      // The parent is funded; the workflow's next attempt sends again.
      const c = await attempt({}, client()).fundWallet(input);
      inFlight.open();
      const aOutcome = await a;
      expect([c.state, aOutcome.state]).toContain('succeeded');
      const moved = shaped.state().transfers.filter((t) => t.subaccountId === subaccountId);
      expect(moved).toHaveLength(1);
      const intent = await ctx.pool.query<{ state: string; attempts: number }>(
        `SELECT state, attempts FROM transfer_intents WHERE external_ref = $1`,
        [ref],
      );
      expect(intent.rows[0]).toMatchObject({ state: 'succeeded' });
    });
  });
});
