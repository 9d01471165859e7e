import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlatformClient } from '../../src/platform/index.js';
import { DEFAULT_PARENT_ID, type RunningSimulator } from '../../src/sim/index.js';

/**
 * Fifty sub-accounts made behind the orchestrator's back, the way an earlier script and the console
 * would have left them: 40 with refs (every 4th with a key, every 8th of those in use, four suspended,
 * eight funded, one with two keys — one in use, one quiet), one carrying a ref we own, two sharing a
 * ref, and seven without any ref (five given one by a mapping file).
 */
export interface ImportWorld {
  prefix: string;
  imp: (i: number) => string;
  ownRef: string;
  twinRef: string;
  ids: Record<string, string>;
  ownStrayId: string;
  twinIds: string[];
  noRefIds: string[];
  mappedRefs: string[];
  mapFile: string;
  /** Refs whose keys a consumer still uses (last use shown), and all keys by ref. */
  keysByRef: Record<string, Array<{ id: string; token: string; used: boolean }>>;
  suspendedRefs: string[];
  fundedRefs: Record<string, string>;
}

export async function useToken(sim: RunningSimulator, token: string): Promise<number> {
  const response = await fetch(`${sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } });
  await response.body?.cancel();
  return response.status;
}

export async function seedBehindOurBack(
  sim: RunningSimulator,
  platform: PlatformClient,
  prefix: string,
  ownRef: string,
): Promise<ImportWorld> {
  let n = 0;
  const create = async (externalRef: string) =>
    (
      await platform.createSubaccount({
        name: `Legacy ${externalRef}`,
        externalRef,
        idempotencyKey: `legacy-${prefix}-${(n += 1)}`,
      })
    ).subaccount.id;
  const imp = (i: number) => `${prefix}-imp-${String(i).padStart(2, '0')}`;
  const world: ImportWorld = {
    prefix,
    imp,
    ownRef,
    twinRef: `${prefix}-twin`,
    ids: {},
    ownStrayId: '',
    twinIds: [],
    noRefIds: [],
    mappedRefs: [],
    mapFile: '',
    keysByRef: {},
    suspendedRefs: [],
    fundedRefs: {},
  };
  const key = async (ref: string, name: string, used: boolean) => {
    const made = await platform.createTenantKey({ subaccountId: world.ids[ref]!, name });
    const token = made.token.reveal();
    if (used && (await useToken(sim, token)) !== 200) throw new Error(`key of ${ref} did not work`);
    (world.keysByRef[ref] ??= []).push({ id: made.key.id, token, used });
  };
  for (let i = 0; i < 40; i += 1) {
    const ref = imp(i);
    world.ids[ref] = await create(ref);
    if (i % 4 === 0) await key(ref, `legacy-ci-${i}`, i % 8 === 0);
    if (i === 2) {
      await key(ref, 'legacy-web', true);
      await key(ref, 'legacy-batch', false);
    }
    if (i % 5 === 1) {
      const amount = String(1000 + i);
      await platform.transfer({
        subaccountId: world.ids[ref]!,
        amountMicroUsd: amount,
        idempotencyKey: `legacy-fund-${prefix}-${i}`,
      });
      world.fundedRefs[ref] = amount;
    }
    if (i % 10 === 3) {
      await platform.suspendSubaccount({ subaccountId: world.ids[ref]! });
      world.suspendedRefs.push(ref);
    }
  }
  world.ownStrayId = await create(ownRef);
  world.twinIds = [await create(world.twinRef), await create(world.twinRef)];
  const before = new Set(sim.state().subaccounts.map((s) => s.id));
  const bulk = await fetch(`${sim.url}/__sim/subaccounts/bulk`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ parentId: DEFAULT_PARENT_ID, count: 7, externalRefPrefix: null }),
  });
  if (!bulk.ok) throw new Error(`bulk create failed: ${bulk.status}`);
  world.noRefIds = sim
    .state()
    .subaccounts.filter((s) => !before.has(s.id))
    .map((s) => s.id)
    .sort();
  world.mappedRefs = world.noRefIds.slice(0, 5).map((_, i) => `${prefix}-legacy-${i}`);
  world.mapFile = writeMap(
    prefix,
    'refs',
    ['subaccountId,externalRef', ...world.mappedRefs.map((ref, i) => `${world.noRefIds[i]},${ref}`)].join('\n'),
  );
  for (const [i, ref] of world.mappedRefs.entries()) world.ids[ref] = world.noRefIds[i]!;
  return world;
}

export function writeMap(prefix: string, name: string, text: string): string {
  const file = join(tmpdir(), `import-${prefix}-${name}.csv`);
  writeFileSync(file, `${text}\n`);
  return file;
}
