import type { Pool } from '../../src/db/pool.js';
import type { SimStateSnapshot } from '../../src/sim/index.js';
import type { Operation } from '../driver.js';
import { invariant, type InvariantResult } from './invariant.js';

/**
 * Our records (Postgres) against the platform's books (`/__sim/state`): the exactly-once
 * invariants. Only tenants whose onboarding completed are held to a final state; the others are
 * reported by the operations check.
 */
export interface TenantRow {
  external_ref: string;
  subaccount_id: string | null;
  status: string;
}
export interface IntentRow {
  external_ref: string;
  state: string;
  amount: string;
  idempotency_key: string;
}
export interface KeyRow {
  external_ref: string;
  platform_key_id: string | null;
  status: string;
  key_name: string;
}

export async function checkRecords(
  pool: Pool,
  sim: SimStateSnapshot,
  prefix: string,
  operations: Operation[],
): Promise<InvariantResult[]> {
  const like = `${prefix}%`;
  const tenants = (
    await pool.query<TenantRow>(
      'SELECT external_ref, subaccount_id, status FROM tenants WHERE external_ref LIKE $1::text',
      [like],
    )
  ).rows;
  const intents = (
    await pool.query<IntentRow>(
      'SELECT external_ref, state, amount_micro_usd::text AS amount, idempotency_key ' +
        'FROM transfer_intents WHERE external_ref LIKE $1::text',
      [like],
    )
  ).rows;
  const keys = (
    await pool.query<KeyRow>(
      'SELECT external_ref, platform_key_id, status, key_name FROM tenant_keys WHERE external_ref LIKE $1::text',
      [like],
    )
  ).rows;
  return compareRecords({ tenants, intents, keys }, sim, prefix, operations);
}

export interface RecordRows {
  tenants: TenantRow[];
  intents: IntentRow[];
  keys: KeyRow[];
}

/** The invariants over rows already read: pure, so each rule can be tested on its own. */
export function compareRecords(
  { tenants, intents, keys }: RecordRows,
  sim: Pick<SimStateSnapshot, 'subaccounts' | 'transfers' | 'apiKeys'>,
  prefix: string,
  operations: Operation[],
): InvariantResult[] {
  const byRef = new Map(tenants.map((t) => [t.external_ref, t]));
  const onboarded = new Set(
    operations.filter((o) => o.kind === 'onboard' && o.outcome === 'completed').map((o) => o.externalRef),
  );
  const closed = new Set(
    operations.filter((o) => o.kind === 'close' && o.outcome === 'completed').map((o) => o.externalRef),
  );
  const closeTried = new Set(operations.filter((o) => o.kind === 'close').map((o) => o.externalRef));
  const suspended = new Set(
    operations.filter((o) => o.kind === 'suspend' && o.outcome === 'completed').map((o) => o.externalRef),
  );
  // A rotation or close still running at the deadline may hold its new key mid-way (created on the
  // platform, recorded as `creating`) or its old one (`revoking`): the overlap is the design, not a
  // defect. Such a tenant may show one key more than at rest, each one recorded by us.
  const inFlight = new Set(
    operations
      .filter((o) => (o.kind === 'rotate' || o.kind === 'close') && o.outcome === 'unfinished')
      .map((o) => o.externalRef),
  );
  const startedRefs = [...new Set(operations.filter((o) => o.kind === 'onboard').map((o) => o.externalRef))];

  const created = invariant('each tenant created once');
  const transfers = invariant('each transfer applied once');
  const activeKeys = invariant('exactly the expected active keys');
  const orphans = invariant('no orphan key');
  const statuses = invariant('tenant status as expected');

  for (const ref of startedRefs) {
    created.checked += 1;
    const subs = sim.subaccounts.filter((s) => s.externalRef === ref);
    const row = byRef.get(ref);
    if (subs.length > 1)
      created.violations.push(
        `${ref}: ${subs.length} sub-accounts on the platform (${subs.map((s) => `${s.id} ${s.status}`).join(', ')})`,
      );
    if (subs.filter((s) => s.status !== 'closed').length > 1)
      created.violations.push(`${ref}: more than one live sub-account`);
    if (row?.subaccount_id && !subs.some((s) => s.id === row.subaccount_id))
      created.violations.push(`${ref}: our record names ${row.subaccount_id}, which the platform does not have`);
    if (onboarded.has(ref) && (subs.length !== 1 || row?.subaccount_id !== subs[0]!.id))
      created.violations.push(
        `${ref}: onboarded, but records say ${row?.subaccount_id ?? 'no sub-account'} and ` +
          `the platform has ${subs.length}`,
      );

    const sub = subs.find((s) => s.id === row?.subaccount_id) ?? subs[0];
    const simTransfers = sub ? sim.transfers.filter((t) => t.subaccountId === sub.id) : [];
    const ours = intents.filter((i) => i.external_ref === ref);
    const succeeded = ours.filter((i) => i.state === 'succeeded');
    transfers.checked += 1;
    const sum = (values: string[]) => values.reduce((total, v) => total + BigInt(v), 0n);
    if (
      simTransfers.length !== succeeded.length ||
      sum(simTransfers.map((t) => t.amountMicroUsd)) !== sum(succeeded.map((i) => i.amount))
    ) {
      transfers.violations.push(
        `${ref}: platform has ${simTransfers.length} transfer(s) summing ` +
          `${sum(simTransfers.map((t) => t.amountMicroUsd))}; our succeeded intents: ` +
          `${succeeded.length} summing ${sum(succeeded.map((i) => i.amount))}`,
      );
    }
    for (const t of simTransfers) {
      if (!succeeded.some((i) => i.idempotency_key === t.idempotencyKey))
        transfers.violations.push(
          `${ref}: platform transfer ${t.id} under key ${t.idempotencyKey} matches no succeeded intent of ours`,
        );
    }
    for (const open of ours.filter((i) => ['pending', 'unknown', 'needs_operator'].includes(i.state))) {
      if (onboarded.has(ref))
        transfers.violations.push(
          `${ref}: intent ${open.idempotency_key} still ${open.state} after onboarding completed`,
        );
    }

    if (!onboarded.has(ref) || !sub) continue;
    const expected = closed.has(ref) ? 'closed' : suspended.has(ref) ? 'suspended' : 'active';
    statuses.checked += 1;
    const why = expected === 'active' && closeTried.has(ref) ? ' (its close did not complete)' : '';
    const closing = inFlight.has(ref) && expected === 'active' && closeTried.has(ref);
    if (
      closing
        ? row?.status === 'closed' && sub.status !== 'closed'
        : row?.status !== expected || sub.status !== expected
    )
      statuses.violations.push(
        `${ref}: expected ${expected}${why}; our record says ${row?.status ?? 'nothing'}, the platform ${sub.status}`,
      );

    const simActive = sim.apiKeys.filter((k) => k.subaccountId === sub.id && k.status === 'active');
    // A suspended tenant is not rotated: a key whose secret a restore lost stays recorded `unmanaged` (known, never an
    // orphan) until the tenant is resumed and its adoption replaces it (docs/operations.md, the restore runbook).
    const held = (status: string | undefined) =>
      status === 'active' || (expected === 'suspended' && status === 'unmanaged');
    const ourActive = keys.filter((k) => k.external_ref === ref && held(k.status));
    const want = expected === 'closed' ? 0 : 1;
    // Recorded by id, or by name while the create's answer is still on its way to our records.
    const recordedAtAll = (key: { id: string; name: string }) =>
      keys.some((k) => k.external_ref === ref && (k.platform_key_id === key.id || k.key_name === key.name));
    activeKeys.checked += 1;
    if (inFlight.has(ref)) {
      if (simActive.length > want + 1 || simActive.some((k) => !recordedAtAll(k)) || ourActive.length > want + 1)
        activeKeys.violations.push(
          `${ref} (${expected}, operation in flight at the deadline): ${simActive.length} ` +
            `active key(s) on the platform [${simActive.map((k) => `${k.id} ${k.name}`).join(', ')}], ` +
            `${ourActive.length} in our records`,
        );
      continue;
    }
    if (simActive.length !== want || ourActive.length !== want) {
      activeKeys.violations.push(
        `${ref} (${expected}): ${simActive.length} active key(s) on the platform [${simActive.map((k) => `${k.id} ${k.name}`).join(', ')}], ` +
          `${ourActive.length} in our records`,
      );
    }
    for (const key of sim.apiKeys.filter((k) => k.subaccountId === sub.id)) {
      orphans.checked += 1;
      const record = keys.find((k) => k.external_ref === ref && k.platform_key_id === key.id);
      if (key.status === 'active' && !held(record?.status))
        orphans.violations.push(
          `${ref}: platform key ${key.id} (${key.name}) is active; our record: ${record ? record.status : 'none'}`,
        );
      if (key.status === 'revoked' && record?.status === 'active')
        orphans.violations.push(`${ref}: our record says key ${key.id} is active, the platform revoked it`);
    }
    for (const stale of keys.filter(
      (k) => k.external_ref === ref && (k.status === 'creating' || k.status === 'revoking'),
    )) {
      orphans.violations.push(`${ref}: key record ${stale.key_name} left in ${stale.status}`);
    }
  }
  // The money invariant a restore tests hardest: our keys are a digest of the business intent plus a generation,
  // so two transfers of one digest are one intent paid twice, whatever the records say.
  const paidOnce = invariant('no business intent paid twice');
  const byIntent = new Map<string, string[]>();
  for (const t of sim.transfers) {
    const match = /^(tpo-xfer-[0-9a-f]{32})-[1-9][0-9]*$/.exec(t.idempotencyKey ?? '');
    if (!match) continue;
    byIntent.set(match[1]!, [...(byIntent.get(match[1]!) ?? []), `${t.id} ${t.idempotencyKey} ${t.amountMicroUsd}`]);
  }
  for (const [intent, made] of byIntent) {
    paidOnce.checked += 1;
    if (made.length > 1) paidOnce.violations.push(`${intent}: ${made.length} transfers (${made.join('; ')})`);
  }
  for (const sub of sim.subaccounts.filter((s) => s.externalRef.startsWith(prefix) && !byRef.has(s.externalRef))) {
    created.violations.push(`${sub.externalRef}: platform sub-account ${sub.id} has no record of ours`);
  }
  return [created, transfers, paidOnce, activeKeys, orphans, statuses];
}

/**
 * A token nobody can reveal is no key: every active key record of the run holds its sealed secret (a restore of the
 * records to a point before the key was made loses it; the key must then be replaced, not kept).
 */
export async function checkKeySecrets(pool: Pool, prefix: string): Promise<InvariantResult> {
  const result = invariant('every active key has its secret');
  const { rows } = await pool.query<{ external_ref: string; key_name: string; sealed: boolean }>(
    `SELECT k.external_ref, k.key_name, s.tenant_key_id IS NOT NULL AS sealed
       FROM tenant_keys k LEFT JOIN key_secrets s ON s.tenant_key_id = k.id
      WHERE k.external_ref LIKE $1::text AND k.status = 'active'`,
    [`${prefix}%`],
  );
  result.checked = rows.length;
  for (const row of rows.filter((r) => !r.sealed))
    result.violations.push(`${row.external_ref}: active key ${row.key_name} has no sealed secret in our records`);
  return result;
}

/** Tokens must live only sealed: no table of ours may hold one in the clear. */
export async function checkTokensInRecords(pool: Pool): Promise<InvariantResult> {
  const result = invariant('no token in our records');
  for (const table of ['tenants', 'transfer_intents', 'tenant_keys', 'key_secrets', 'key_rotations', 'audit_log']) {
    const { rows } = await pool.query<{ total: string; leaks: string }>(
      `SELECT count(*)::text AS total, count(*) FILTER (WHERE t::text ~ ` +
        `'svsk_[A-Za-z0-9]')::text AS leaks FROM ${table} t`,
    );
    result.checked += Number(rows[0]!.total);
    if (Number(rows[0]!.leaks) > 0)
      result.violations.push(`${table}: ${rows[0]!.leaks} row(s) hold a tenant token in the clear`);
  }
  return result;
}
