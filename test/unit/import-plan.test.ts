import { afterEach, describe, expect, it } from 'vitest';
import { compareTenant, type PlatformKey, type TenantFacts } from '../../activities/drift/compare.js';
import { ImportInputError, parseRefMap } from '../../src/client/imports/import-map.js';
import { buildImportPlan } from '../../src/client/imports/import-plan.js';
import type { Queryable } from '../../src/db/pool.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import { DEFAULT_PARENT_ID, DEFAULT_PLATFORM_KEY, startSimulator, type RunningSimulator } from '../../src/sim/index.js';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ImportInputError);
    return (error as ImportInputError).problems;
  }
  throw new Error('expected an ImportInputError');
}

describe('the --map file', () => {
  it('reads subaccountId,externalRef lines with an optional header, comments and blank lines', () => {
    const map = parseRefMap('subaccountId,externalRef\n# legacy\n\nsub_a, alpha\nsub_b,beta\r\n', 'refs.csv');
    expect([...map.values()]).toEqual([
      { subaccountId: 'sub_a', externalRef: 'alpha', line: 4 },
      { subaccountId: 'sub_b', externalRef: 'beta', line: 5 },
    ]);
  });

  it('names the line and the rule of every malformed row, and refuses the whole file', () => {
    expect(problemsOf(() => parseRefMap('sub_a,alpha,extra\n', 'refs.csv'))).toEqual([
      '--map refs.csv line 1: expected 2 fields "subaccountId,externalRef", found 3',
    ]);
    expect(problemsOf(() => parseRefMap('sub_a,-bad ref\n,beta\n', 'refs.csv'))).toEqual([
      '--map refs.csv line 1: externalRef "-bad ref" must be 1-128 characters of A-Z ' +
        'a-z 0-9 . _ : - starting with a letter or digit',
      '--map refs.csv line 2: subaccountId must be a non-empty id without quotes or blanks',
    ]);
  });

  it('refuses a sub-account mapped twice and a ref given to two sub-accounts', () => {
    expect(problemsOf(() => parseRefMap('sub_a,alpha\nsub_a,beta\nsub_c,alpha\n', 'm.csv'))).toEqual([
      '--map m.csv line 2: subaccountId sub_a is mapped twice (first on line 1)',
      '--map m.csv line 3: externalRef alpha is given to two sub-accounts (sub_a on line 1 and sub_c)',
    ]);
  });
});

describe('drift of an imported tenant', () => {
  const NOW = Date.parse('2026-06-01T00:00:00.000Z');
  const key: PlatformKey = {
    id: 'key_1',
    name: 'ci-deploy',
    status: 'active',
    createdAt: new Date(NOW - 86_400_000).toISOString(),
    lastUsedAt: null,
    lastUseKnown: true,
  };
  const facts = (fields: Partial<TenantFacts>): TenantFacts => ({
    record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'active' },
    subaccounts: [{ id: 'sa_1', externalRef: 'acme', status: 'operating' }],
    keys: [key],
    keyRecords: [
      { id: 'r1', platformKeyId: 'key_1', status: 'unmanaged', slot: 'default', generation: 1, activatedAt: null },
    ],
    transfers: [{ idempotencyKey: 'tpo-open-x', state: 'succeeded', amountMicroUsd: '700' }],
    wallet: { balanceMicroUsd: '700', transfers: [{ id: 'tr_1', idempotencyKey: 'script-1', amountMicroUsd: '700' }] },
    importedTransfers: { keys: ['script-1'], ids: ['tr_1'] },
    schedules: [],
    onboardingProvenIdle: true,
    nowMs: NOW,
    quietPeriodMs: 3_600_000,
    rotationMaxAgeMs: 90 * 86_400_000,
    ...fields,
  });

  it('reports an unmanaged key as key_unmanaged, never as an orphan, and explains the money that was there', () => {
    expect(compareTenant(facts({})).map((f) => [f.kind, f.subject, f.fix])).toEqual([['key_unmanaged', 'key_1', null]]);
  });

  it('still reports money that came in after the import, and an unmanaged key revoked elsewhere', () => {
    const later = facts({
      keys: [{ ...key, status: 'revoked' }],
      wallet: {
        balanceMicroUsd: '900',
        transfers: [
          { id: 'tr_1', idempotencyKey: 'script-1', amountMicroUsd: '700' },
          { id: 'tr_2', idempotencyKey: 'script-2', amountMicroUsd: '200' },
        ],
      },
    });
    expect(compareTenant(later).map((f) => f.kind)).toEqual(['key_revoked_on_platform', 'balance_unexplained']);
  });
});

describe.each(['default', 'alt'] as const)('the import plan against the %s platform shape', (shape) => {
  let sim: RunningSimulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('classifies each sub-account without a record and refuses a colliding mapping whole', async () => {
    sim = await startSimulator({ choices: SIM_SHAPES[shape] });
    const platform = createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
    const create = async (externalRef: string) =>
      (
        await platform.createSubaccount({
          name: `T ${externalRef}`,
          externalRef,
          idempotencyKey: `c-${externalRef}-${Math.random()}`,
        })
      ).subaccount.id;
    const ours = await create('ours');
    const fresh = await create('fresh');
    const taken = await create('ours');
    const twinA = await create('twin');
    const twinB = await create('twin');
    await platform.createTenantKey({ subaccountId: fresh, name: 'legacy' });
    await platform.transfer({ subaccountId: fresh, amountMicroUsd: '1234', idempotencyKey: 'legacy-1' });
    await platform.suspendSubaccount({ subaccountId: twinA });
    const bulk = await fetch(`${sim.url}/__sim/subaccounts/bulk`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ parentId: DEFAULT_PARENT_ID, count: 2, externalRefPrefix: null }),
    });
    expect(bulk.status).toBe(200);
    const noRef = sim
      .state()
      .subaccounts.filter((s) => s.externalRef === '')
      .map((s) => s.id)
      .sort();
    // Our records: `ours` is recorded with its sub-account.
    const db: Queryable = {
      query: (async () => ({ rows: [{ externalRef: 'ours', subaccountId: ours }] })) as never,
    };

    const plan = await buildImportPlan({ platform, db }, { map: parseRefMap(`${noRef[0]},mapped-1\n`, 'm.csv') });
    expect(plan).toMatchObject({ listed: 7, recorded: 1, importable: 2 });
    const row = (id: string) => plan.rows.find((r) => r.subaccountId === id)!;
    expect(row(fresh)).toMatchObject({
      externalRef: 'fresh',
      refSource: 'platform',
      status: 'operating',
      projects: 0,
      balanceMicroUsd: '1234',
      importable: true,
      conflicts: [],
    });
    expect(row(fresh).activeKeys).toEqual([expect.objectContaining({ name: 'legacy', lastUsedAt: null })]);
    expect(row(noRef[0]!)).toMatchObject({ externalRef: 'mapped-1', refSource: 'map', importable: true });
    expect(row(noRef[1]!).conflicts.map((c) => c.code)).toEqual(['no_ref']);
    expect(row(taken).conflicts.map((c) => c.code)).toEqual(['ref_ours']);
    expect(row(twinA)).toMatchObject({ status: 'suspended', projects: null, importable: false });
    expect(row(twinA).conflicts.map((c) => c.code)).toEqual(['ref_duplicate']);
    expect(row(twinB).conflicts[0]!.message).toContain(twinA);

    await expect(
      buildImportPlan(
        { platform, db },
        { map: parseRefMap(`${noRef[0]},fresh\n${noRef[1]},ours\n${fresh},x\nsub_nope,y\n`, 'm.csv') },
      ),
    ).rejects.toMatchObject({
      problems: [
        `--map line 1: externalRef fresh collides with sub-account ${fresh}, which carries it on the platform`,
        '--map line 2: externalRef ours collides with our tenant record of that ref',
        `--map line 3: subaccountId ${fresh} carries externalRef fresh on the platform; a ` +
          `mapping is only for sub-accounts without one`,
        '--map line 4: subaccountId sub_nope is not a live sub-account of this parent',
      ],
    });
  });
});
