import { findOwners } from '../../db/imports-store.js';
import type { Queryable } from '../../db/pool.js';
import { PlatformTenantStateError, type PlatformClient, type SubaccountRecord } from '../../platform/index.js';
import { ImportInputError, type RefMapping } from './import-map.js';

/**
 * `tenantctl import plan`: what an import would do with each live platform sub-account that no record
 * owns. Reads only (the platform through a client paced under the fleet rate limit, our records);
 * writes nothing. `import apply` builds the same plan first and imports exactly its importable rows.
 */
export type ConflictCode = 'no_ref' | 'ref_invalid' | 'ref_ours' | 'ref_duplicate' | 'status_unknown';

export interface PlanRow {
  subaccountId: string;
  name: string | null;
  /** The sub-account's own externalRef (null: it carries none). */
  platformRef: string | null;
  /** The ref import would record (null: none can be chosen). */
  externalRef: string | null;
  refSource: 'platform' | 'map' | null;
  status: string;
  rawStatus: string | null;
  /** Active keys (null: the list could not be read). */
  activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null | undefined }> | null;
  /** Project count (null: not readable, e.g. a suspended tenant's resources). */
  projects: number | null;
  balanceMicroUsd: string | null;
  conflicts: Array<{ code: ConflictCode; message: string }>;
  importable: boolean;
}

export interface ImportPlan {
  /** Live sub-accounts the platform listed. */
  listed: number;
  /** Of those, already in our records (not import's business). */
  recorded: number;
  rows: PlanRow[];
  importable: number;
}

const REF = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export async function buildImportPlan(
  deps: { platform: PlatformClient; db: Queryable },
  options: { map?: Map<string, RefMapping>; concurrency?: number } = {},
): Promise<ImportPlan> {
  const map = options.map ?? new Map<string, RefMapping>();
  const { subaccounts } = await deps.platform.listSubaccounts();
  const live = subaccounts.filter((s) => s.status !== 'closed');
  const platformRefs = live.map((s) => s.externalRef).filter((r): r is string => r !== undefined);
  const owners = await findOwners(
    deps.db,
    [...platformRefs, ...[...map.values()].map((m) => m.externalRef)],
    live.map((s) => s.id),
  );
  const ownedIds = new Set(owners.map((o) => o.subaccountId).filter((id): id is string => id !== null));
  const ourRefs = new Map(owners.map((o) => [o.externalRef, o.subaccountId]));
  const candidates = live.filter((s) => !ownedIds.has(s.id));

  checkMapping(map, live, ownedIds, ourRefs);

  const refOf = (s: SubaccountRecord) => s.externalRef ?? map.get(s.id)?.externalRef;
  // Duplicates among the sub-accounts without a record (one sharing a ref of ours is `ref_ours`).
  const carriers = new Map<string, string[]>();
  for (const s of candidates) {
    const ref = refOf(s);
    if (ref !== undefined) carriers.set(ref, [...(carriers.get(ref) ?? []), s.id]);
  }

  const rows: PlanRow[] = candidates.map((s) => {
    const mapped = map.get(s.id);
    const ref = refOf(s) ?? null;
    const conflicts: PlanRow['conflicts'] = [];
    if (ref === null)
      conflicts.push({ code: 'no_ref', message: 'carries no externalRef: give it one in a --map file' });
    else {
      if (!REF.test(ref))
        conflicts.push({ code: 'ref_invalid', message: `externalRef "${ref}" is not a ref we can record` });
      if (ourRefs.has(ref)) {
        const owner = ourRefs.get(ref);
        conflicts.push({
          code: 'ref_ours',
          message:
            `ref ${ref} is already ours (tenant ` +
            `${ref}${owner ? `, sub-account ${owner}` : ', no sub-account yet'})`,
        });
      }
      const same = carriers.get(ref) ?? [];
      if (same.length > 1)
        conflicts.push({
          code: 'ref_duplicate',
          message: `${same.length} sub-accounts on the platform carry ref ${ref}: ${same.join(', ')}`,
        });
    }
    if (s.status === 'unknown')
      conflicts.push({ code: 'status_unknown', message: `platform status "${s.rawStatus ?? '?'}" is not one we know` });
    return {
      subaccountId: s.id,
      name: s.name ?? null,
      platformRef: s.externalRef ?? null,
      externalRef: ref,
      refSource: s.externalRef !== undefined ? 'platform' : mapped ? 'map' : null,
      status: s.status,
      rawStatus: s.rawStatus ?? null,
      activeKeys: null,
      projects: null,
      balanceMicroUsd: null,
      conflicts,
      importable: conflicts.length === 0,
    };
  });

  await eachLimited(rows, options.concurrency ?? 4, (row) => observe(deps.platform, row));
  rows.sort(
    (a, b) =>
      (a.externalRef ?? '~').localeCompare(b.externalRef ?? '~') || a.subaccountId.localeCompare(b.subaccountId),
  );
  return {
    listed: live.length,
    recorded: live.length - candidates.length,
    rows,
    importable: rows.filter((r) => r.importable).length,
  };
}

/** A mapping that names what is not there, or collides with a ref in use, is refused whole. */
function checkMapping(
  map: Map<string, RefMapping>,
  live: SubaccountRecord[],
  ownedIds: Set<string>,
  ourRefs: Map<string, string | null>,
): void {
  const byId = new Map(live.map((s) => [s.id, s]));
  const byRef = new Map(live.filter((s) => s.externalRef !== undefined).map((s) => [s.externalRef!, s.id]));
  const problems: string[] = [];
  for (const m of map.values()) {
    const where = `--map line ${m.line}`;
    // A row an earlier import already recorded as given (the same file applied again) is done, not a conflict.
    if (ourRefs.has(m.externalRef) && ourRefs.get(m.externalRef) === m.subaccountId) continue;
    const s = byId.get(m.subaccountId);
    if (!s) problems.push(`${where}: subaccountId ${m.subaccountId} is not a live sub-account of this parent`);
    else if (ownedIds.has(s.id))
      problems.push(`${where}: subaccountId ${m.subaccountId} is already in our records under another ref`);
    else if (s.externalRef !== undefined)
      problems.push(
        `${where}: subaccountId ${m.subaccountId} carries externalRef ${s.externalRef} on ` +
          `the platform; a mapping is only for sub-accounts without one`,
      );
    if (ourRefs.has(m.externalRef))
      problems.push(`${where}: externalRef ${m.externalRef} collides with our tenant record of that ref`);
    else if (byRef.has(m.externalRef))
      problems.push(
        `${where}: externalRef ${m.externalRef} collides with sub-account ` +
          `${byRef.get(m.externalRef)!}, which carries it on the platform`,
      );
  }
  if (problems.length) throw new ImportInputError(problems);
}

async function observe(platform: PlatformClient, row: PlanRow): Promise<void> {
  const subaccountId = row.subaccountId;
  const [{ keys }, { wallet }] = await Promise.all([
    platform.listTenantKeys({ subaccountId }),
    platform.getWallet({ subaccountId }),
  ]);
  row.activeKeys = keys
    .filter((k) => k.status === 'active')
    .map((k) => ({ id: k.id, name: k.name ?? null, lastUsedAt: k.lastUsedAt }));
  row.balanceMicroUsd = wallet.balanceKnown ? (wallet.balanceMicroUsd ?? null) : null;
  row.projects = await platform
    .listProjects({ auth: { kind: 'platform', subaccountId } })
    .then((r) => r.projects.length)
    .catch((error: unknown) => {
      // A suspended tenant answers resource calls with SUBACCOUNT_SUSPENDED: the count is unknown.
      if (error instanceof PlatformTenantStateError) return null;
      throw error;
    });
}

async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
