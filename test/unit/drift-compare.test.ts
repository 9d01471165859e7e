import { describe, expect, it } from 'vitest';
import {
  compareTenant,
  unownedSubaccountFinding,
  type PlanFacts,
  type PlatformKey,
  type TenantFacts,
} from '../../activities/drift/compare.js';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function facts(fields: Partial<TenantFacts> = {}): TenantFacts {
  return {
    record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'active' },
    subaccounts: [{ id: 'sa_1', externalRef: 'acme', status: 'operating' }],
    keys: [],
    keyRecords: [],
    transfers: [],
    schedules: [],
    onboardingProvenIdle: true,
    nowMs: NOW,
    quietPeriodMs: 24 * HOUR,
    rotationMaxAgeMs: 90 * DAY,
    ...fields,
  };
}
const key = (fields: Partial<PlatformKey>): PlatformKey => ({
  id: 'key_1',
  name: 'tpo-default-g1-a1',
  status: 'active',
  createdAt: ago(30 * DAY),
  lastUsedAt: null,
  lastUseKnown: true,
  ...fields,
});
const kinds = (f: TenantFacts) => compareTenant(f).map((x) => x.kind);

describe('drift comparison of one tenant', () => {
  it('finds nothing when records and platform agree', () => {
    const f = facts({
      keys: [key({})],
      keyRecords: [
        { id: 'r1', platformKeyId: 'key_1', status: 'active', slot: 'default', generation: 1, activatedAt: ago(DAY) },
      ],
    });
    expect(compareTenant(f)).toEqual([]);
  });

  describe('orphan keys', () => {
    // A lost create of a generation we record, beside the tenant's own live key of the slot.
    const own = key({ id: 'key_0', name: 'tpo-default-g1-a1' });
    const ownRecord = {
      id: 'r0',
      platformKeyId: 'key_0',
      status: 'active',
      slot: 'default',
      generation: 1,
      activatedAt: ago(DAY),
    };
    const orphanFacts = (orphan: PlatformKey) =>
      facts({
        keys: [own, { ...orphan, name: orphan.name === 'tpo-default-g1-a1' ? 'tpo-default-g1-a2' : orphan.name }],
        keyRecords: [ownRecord],
      });

    it('offers the revoke only for a key of ours quiet for the whole quiet period', () => {
      const [finding] = compareTenant(orphanFacts(key({ lastUsedAt: ago(25 * HOUR) })));
      expect(finding).toMatchObject({
        kind: 'key_orphan',
        fix: 'revoke_orphan_key',
        evidence: { namedByUs: true, quietForMs: 25 * HOUR },
      });
      expect(finding).not.toHaveProperty('fixBlockedBecause');
    });

    it('blocks the revoke of a key used recently', () => {
      const [finding] = compareTenant(orphanFacts(key({ lastUsedAt: ago(HOUR) })));
      expect(finding).toMatchObject({
        kind: 'key_orphan',
        fix: null,
        fixBlockedBecause: expect.stringMatching(/used 3600s ago/),
      });
    });

    it('blocks the revoke when the platform shows no last use (unknown is never "quiet")', () => {
      const [finding] = compareTenant(orphanFacts(key({ lastUseKnown: false })));
      expect(finding).toMatchObject({
        kind: 'key_orphan',
        fix: null,
        fixBlockedBecause: 'the platform shows no last use for it',
        evidence: { quietForMs: null },
      });
    });

    it('counts a never-used key as quiet since its creation', () => {
      expect(compareTenant(orphanFacts(key({ createdAt: ago(HOUR) })))[0]).toMatchObject({ fix: null });
      expect(compareTenant(orphanFacts(key({ createdAt: ago(2 * DAY) })))[0]).toMatchObject({
        fix: 'revoke_orphan_key',
      });
    });

    it('never offers to revoke a key another naming scheme made', () => {
      const [finding] = compareTenant(orphanFacts(key({ name: 'ci-deploy', lastUsedAt: ago(30 * DAY) })));
      expect(finding).toMatchObject({
        kind: 'key_orphan',
        fix: null,
        fixBlockedBecause: 'the key is not named by our scheme',
      });
    });
  });

  it('tells the key-record disagreements apart, fixing only a key the platform revoked', () => {
    const recordOf = (platformKeyId: string, status: string) => ({
      id: `r-${platformKeyId}`,
      platformKeyId,
      status,
      slot: 'default',
      generation: 1,
      activatedAt: ago(DAY),
    });
    const f = facts({
      keys: [key({ id: 'k_revoked_here', status: 'active' }), key({ id: 'k_revoked_there', status: 'revoked' })],
      keyRecords: [
        recordOf('k_revoked_here', 'revoked'),
        recordOf('k_revoked_there', 'active'),
        recordOf('k_missing', 'active'),
      ],
    });
    const found = compareTenant(f);
    expect(found.map((x) => [x.kind, x.subject, x.fix])).toEqual([
      ['key_active_but_revoked', 'k_revoked_here', null],
      ['key_revoked_on_platform', 'k_revoked_there', 'mark_key_revoked'],
      ['key_missing_on_platform', 'k_missing', null],
    ]);
  });

  it('records the end of a rotation whose run ended, and leaves a terminated one to the next rotation', () => {
    const rotation = {
      id: '7',
      slot: 'default',
      fromGeneration: 1,
      toGeneration: 2,
      state: 'running',
      workflowId: 'rotation:acme:default',
    };
    const completed = compareTenant(facts({ endedRotations: [{ ...rotation, runStatus: 'COMPLETED' }] }));
    expect(completed).toEqual([
      expect.objectContaining({
        kind: 'rotation_unrecorded',
        subject: 'rotation:acme:default',
        fix: 'record_rotation_end',
        evidence: expect.objectContaining({ becomes: 'completed' }),
      }),
    ]);
    const cancelled = compareTenant(facts({ endedRotations: [{ ...rotation, runStatus: 'CANCELED' }] }));
    expect(cancelled[0]).toMatchObject({ fix: 'record_rotation_end', evidence: { becomes: 'cancelled' } });
    const terminated = compareTenant(facts({ endedRotations: [{ ...rotation, runStatus: 'TERMINATED' }] }));
    expect(terminated).toEqual([expect.objectContaining({ kind: 'rotation_unrecorded', fix: null })]);
    expect(kinds(facts())).toEqual([]);
  });

  it('records closed an onboarding the records hold under way with no sub-account, that completed and was closed', () => {
    const lost: Partial<TenantFacts> = {
      record: { externalRef: 'acme', subaccountId: null, status: 'creating' },
      subaccounts: [],
      keys: undefined,
    };
    const closed = compareTenant(
      facts({ ...lost, lifecycle: { onboarded: true, subaccountId: 'sa_9', last: 'closed' } }),
    );
    expect(closed).toEqual([
      expect.objectContaining({
        kind: 'onboarding_unrecorded',
        subject: 'sa_9',
        fix: 'record_onboarded',
        evidence: expect.objectContaining({ becomes: 'closed' }),
      }),
    ]);
    // Without our close completed, or with the sub-account still listed, it is not this finding.
    expect(kinds(facts({ ...lost, lifecycle: { onboarded: true, subaccountId: 'sa_9', last: null } }))).toEqual([]);
    expect(
      kinds(
        facts({
          ...lost,
          subaccounts: [{ id: 'sa_9', externalRef: 'acme', status: 'operating' }],
          lifecycle: { onboarded: true, subaccountId: 'sa_9', last: 'closed' },
        }),
      ),
    ).toEqual(['subaccount_unrecorded']);
  });

  it("settles an open intent of a closed tenant from its owning run's result, never without it", () => {
    const intent = {
      idempotencyKey: 'tpo-xfer-aa-1',
      state: 'unknown',
      amountMicroUsd: '5',
      purpose: 'initial-funding',
    };
    const closed: Partial<TenantFacts> = { keys: undefined, transfers: [intent] };
    expect(compareTenant(facts(closed))).toEqual([
      expect.objectContaining({
        kind: 'transfer_unknown',
        fix: null,
        evidence: expect.objectContaining({ platformShows: 'not shown' }),
      }),
    ]);
    // A pending one is its run's business: reported only with the run's word that it made it.
    const pending = { ...closed, transfers: [{ ...intent, state: 'pending' }] };
    expect(compareTenant(facts(pending))).toEqual([]);
    expect(compareTenant(facts({ ...pending, madeByRun: { 'tpo-xfer-aa-1': 'txn_1' } }))).toEqual([
      expect.objectContaining({ kind: 'transfer_unknown', fix: 'settle_transfer' }),
    ]);
    const settled = compareTenant(facts({ ...closed, madeByRun: { 'tpo-xfer-aa-1': 'txn_1' } }));
    expect(settled).toEqual([
      expect.objectContaining({
        kind: 'transfer_unknown',
        fix: 'settle_transfer',
        evidence: expect.objectContaining({ platformTransferId: 'txn_1' }),
      }),
    ]);
  });

  it('records from its run a top-up the records lost of a tenant whose wallet cannot be read (closed since)', () => {
    const gone = {
      record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'active' },
      subaccounts: [],
      keys: undefined,
      keyRecords: [],
    };
    const lost = {
      workflowId: 'fund:acme:k1',
      transferId: 'txn_9',
      amountMicroUsd: '125000',
      idempotencyKey: 'tpo-xfer-bb-1',
    };
    const found = compareTenant(facts({ ...gone, lostByRuns: [lost] })).filter((f) => f.kind === 'transfer_unrecorded');
    expect(found).toEqual([
      expect.objectContaining({
        subject: 'tpo-xfer-bb-1',
        fix: 'adopt_transfer',
        evidence: {
          transfer: { id: 'txn_9', idempotencyKey: 'tpo-xfer-bb-1', amountMicroUsd: '125000' },
          runShows: 'made by fund:acme:k1 (completed); the wallet cannot be read',
        },
      }),
    ]);
    expect(compareTenant(facts(gone)).filter((f) => f.kind === 'transfer_unrecorded')).toEqual([]);
  });

  it("records revoked a closed tenant's key records that still say live", () => {
    const closed = facts({
      record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'closed' },
      subaccounts: [],
      keys: undefined,
      keyRecords: [
        { id: 'r1', platformKeyId: 'key_1', status: 'active', slot: 'default', generation: 1, activatedAt: ago(DAY) },
        { id: 'r2', platformKeyId: 'key_0', status: 'revoked', slot: 'default', generation: 0, activatedAt: null },
      ],
    });
    expect(compareTenant(closed)).toEqual([
      expect.objectContaining({ kind: 'key_revoked_on_platform', subject: 'key_1', fix: 'mark_key_revoked' }),
    ]);
  });

  it('checks no key when the keys were not observed', () => {
    expect(
      kinds(
        facts({
          keys: undefined,
          keyRecords: [
            { id: 'r', platformKeyId: 'k', status: 'active', slot: 'default', generation: 1, activatedAt: ago(DAY) },
          ],
        }),
      ),
    ).toEqual([]);
  });

  describe('sub-accounts', () => {
    it('adopts a stray only for a pending record, one stray, and a proven-idle onboarding', () => {
      const pending = { externalRef: 'acme', subaccountId: null, status: 'creating' };
      const stray = { id: 'sa_9', externalRef: 'acme', status: 'operating' };
      expect(compareTenant(facts({ record: pending, subaccounts: [stray] }))[0]).toMatchObject({
        kind: 'subaccount_unrecorded',
        fix: 'adopt_subaccount',
      });
      expect(
        compareTenant(facts({ record: pending, subaccounts: [stray], onboardingProvenIdle: false }))[0],
      ).toMatchObject({ fix: null, fixBlockedBecause: expect.stringMatching(/visibility/) });
      expect(
        compareTenant(facts({ record: pending, subaccounts: [stray, { ...stray, id: 'sa_10' }] }))[0],
      ).toMatchObject({ fix: null, fixBlockedBecause: '2 sub-accounts carry the external ref' });
      expect(compareTenant(facts({ record: { ...pending, status: 'active' }, subaccounts: [stray] }))[0]).toMatchObject(
        { fix: null, fixBlockedBecause: 'the record is active' },
      );
    });

    it('reports state disagreements between record and platform', () => {
      expect(kinds(facts({ subaccounts: [] }))).toEqual(['subaccount_gone']);
      expect(kinds(facts({ subaccounts: [{ id: 'sa_1', externalRef: 'acme', status: 'suspended' }] }))).toEqual([
        'subaccount_suspended',
      ]);
      expect(kinds(facts({ record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'suspended' } }))).toEqual([
        'subaccount_not_suspended',
      ]);
      expect(kinds(facts({ record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'closed' } }))).toEqual([
        'subaccount_not_closed',
      ]);
      expect(kinds(facts({ subaccounts: [{ id: 'sa_1', externalRef: 'other', status: 'operating' }] }))).toEqual([
        'subaccount_mismatch',
      ]);
    });

    it('describes a sub-account no record owns, with no fix', () => {
      expect(unownedSubaccountFinding({ id: 'sa_x', externalRef: 'ghost', status: 'operating' })).toMatchObject({
        kind: 'subaccount_unrecorded',
        fix: null,
        externalRef: 'ghost',
      });
    });
  });

  describe('money', () => {
    const succeeded = { idempotencyKey: 'tpo-fund-1', state: 'succeeded', amountMicroUsd: '1000' };

    it('finds a balance below what we put in normal (tenants spend), and one above it unexplained', () => {
      expect(kinds(facts({ transfers: [succeeded], wallet: { balanceMicroUsd: '400', transfers: [] } }))).toEqual([]);
      const [finding] = compareTenant(
        facts({ transfers: [succeeded], wallet: { balanceMicroUsd: '1500', transfers: [] } }),
      );
      expect(finding).toMatchObject({
        kind: 'balance_unexplained',
        evidence: { excessMicroUsd: '500', recordedInMicroUsd: '1000' },
      });
    });

    it('reports a transfer made under a key that is not ours, even with the balance explained', () => {
      const wallet = {
        balanceMicroUsd: '1000',
        transfers: [{ id: 't1', idempotencyKey: 'someone-else', amountMicroUsd: '10' }],
      };
      expect(compareTenant(facts({ transfers: [succeeded], wallet }))[0]).toMatchObject({
        kind: 'balance_unexplained',
        evidence: { excessMicroUsd: '0' },
      });
    });

    it('reports an unknown transfer intent with what the platform shows of it', () => {
      const unknown = { idempotencyKey: 'tpo-fund-2', state: 'unknown', amountMicroUsd: '10' };
      const wallet = {
        balanceMicroUsd: '10',
        transfers: [{ id: 't2', idempotencyKey: 'tpo-fund-2', amountMicroUsd: '10' }],
      };
      // Listed under its key: made, so the balance is explained and the intent may be settled.
      expect(compareTenant(facts({ transfers: [unknown], wallet }))).toEqual([
        expect.objectContaining({
          kind: 'transfer_unknown',
          fix: 'settle_transfer',
          evidence: expect.objectContaining({ platformShows: 'applied', platformTransferId: 't2' }),
        }),
      ]);
      expect(compareTenant(facts({ transfers: [unknown] }))[0]).toMatchObject({
        kind: 'transfer_unknown',
        evidence: { platformShows: 'not shown' },
      });
    });
  });

  describe('after a restore of the records (issue 48)', () => {
    const lostKey = 'tpo-xfer-0123456789abcdef0123456789abcdef-1';

    it('adopts a transfer made under our key that no intent records, and counts it as explained money', () => {
      const wallet = {
        balanceMicroUsd: '1010',
        transfers: [
          { id: 't1', idempotencyKey: 'tpo-fund-1', amountMicroUsd: '1000' },
          { id: 't9', idempotencyKey: lostKey, amountMicroUsd: '10' },
        ],
      };
      const succeeded = { idempotencyKey: 'tpo-fund-1', state: 'succeeded', amountMicroUsd: '1000' };
      expect(compareTenant(facts({ transfers: [succeeded], wallet }))).toEqual([
        expect.objectContaining({
          kind: 'transfer_unrecorded',
          subject: lostKey,
          fix: 'adopt_transfer',
          evidence: { transfer: { id: 't9', idempotencyKey: lostKey, amountMicroUsd: '10' } },
        }),
      ]);
    });

    it('settles a pending intent only once the wallet lists it, and never one of another amount', () => {
      const pending = { idempotencyKey: lostKey, state: 'pending', amountMicroUsd: '10' };
      expect(kinds(facts({ transfers: [pending], wallet: { balanceMicroUsd: '0', transfers: [] } }))).toEqual([]);
      const listed = (amount: string) => ({
        balanceMicroUsd: amount,
        transfers: [{ id: 't9', idempotencyKey: lostKey, amountMicroUsd: amount }],
      });
      expect(compareTenant(facts({ transfers: [pending], wallet: listed('10') }))).toEqual([
        expect.objectContaining({ kind: 'transfer_unknown', fix: 'settle_transfer' }),
      ]);
      expect(compareTenant(facts({ transfers: [pending], wallet: listed('11') }))[0]).toMatchObject({
        kind: 'transfer_unknown',
        fix: null,
        fixBlockedBecause: 'the wallet lists 11 under its key, the intent 10',
      });
    });

    it('adopts (never revokes) the only live key of a slot whose generation no record holds', () => {
      // Records restored to before a rotation: generation 1 recorded active, revoked on the platform by the
      // rotation; generation 2, the key in use, known only to the platform.
      const g1 = {
        id: 'r1',
        platformKeyId: 'key_1',
        status: 'active',
        slot: 'default',
        generation: 1,
        activatedAt: null,
      };
      const keys = [
        key({ id: 'key_1', name: 'tpo-default-g1-a1', status: 'revoked' }),
        key({ id: 'key_2', name: 'tpo-default-g2-a1', createdAt: ago(30 * DAY) }),
      ];
      expect(compareTenant(facts({ keys, keyRecords: [g1] }))).toEqual([
        expect.objectContaining({
          kind: 'key_unrecorded',
          subject: 'key_2',
          fix: 'adopt_key',
          evidence: expect.objectContaining({ slot: 'default', generation: 2 }),
        }),
        expect.objectContaining({ kind: 'key_revoked_on_platform', subject: 'key_1', fix: 'mark_key_revoked' }),
      ]);
    });

    it('makes the record follow a state our own completed run left the tenant in, and only that', () => {
      const suspendedOnPlatform = { subaccounts: [{ id: 'sa_1', externalRef: 'acme', status: 'suspended' }] };
      expect(compareTenant(facts(suspendedOnPlatform))[0]).toMatchObject({
        kind: 'subaccount_suspended',
        fix: null,
        fixBlockedBecause: 'no Temporal visibility to show which run of ours moved it',
      });
      expect(
        compareTenant(facts({ ...suspendedOnPlatform, lifecycle: { onboarded: true, last: 'suspended' } }))[0],
      ).toMatchObject({ kind: 'subaccount_suspended', fix: 'record_suspended' });
      // Suspended behind our back (our last run resumed it): reported, never followed.
      expect(
        compareTenant(facts({ ...suspendedOnPlatform, lifecycle: { onboarded: true, last: 'active' } }))[0],
      ).toMatchObject({ kind: 'subaccount_suspended', fix: null });
      expect(
        compareTenant(facts({ subaccounts: [], lifecycle: { onboarded: true, last: 'closed' } }))[0],
      ).toMatchObject({ kind: 'subaccount_gone', fix: 'record_closed' });
    });

    it('reports an onboarding whose end the records lost only when Temporal shows it completed', () => {
      const record = { externalRef: 'acme', subaccountId: 'sa_1', status: 'created' };
      expect(compareTenant(facts({ record, lifecycle: { onboarded: true, last: null } }))[0]).toMatchObject({
        kind: 'onboarding_unrecorded',
        fix: 'record_onboarded',
        evidence: { becomes: 'active' },
      });
      // No completed onboarding: the record is the failed run's to tell (status), not drift's.
      expect(kinds(facts({ record, lifecycle: { onboarded: false, last: null } }))).toEqual([]);
      expect(kinds(facts({ record }))).toEqual([]);
    });

    it('adopts the only live key of a generation whose record a restore left creating', () => {
      const creating = {
        id: 'r1',
        platformKeyId: null,
        status: 'creating',
        slot: 'default',
        generation: 1,
        activatedAt: null,
      };
      const keys = [key({ name: 'tpo-default-g1-a7', createdAt: ago(30 * DAY) })];
      expect(compareTenant(facts({ keys, keyRecords: [creating] }))[0]).toMatchObject({
        kind: 'key_unrecorded',
        fix: 'adopt_key',
      });
      // Without visibility, a key issue still in flight looks the same: reported, never adopted under it.
      expect(compareTenant(facts({ keys, keyRecords: [creating], onboardingProvenIdle: false }))[0]).toMatchObject({
        kind: 'key_unrecorded',
        fix: null,
        fixBlockedBecause: 'no Temporal visibility to prove no run is creating it',
      });
    });

    it('refuses to revoke an orphan that is the only live key of its slot', () => {
      // Its generation holds a key that is gone (revoked): the orphan is an attempt of it, and the slot's only key.
      const revoked = {
        id: 'r1',
        platformKeyId: 'key_9',
        status: 'revoked',
        slot: 'default',
        generation: 1,
        activatedAt: null,
      };
      const [finding] = compareTenant(facts({ keys: [key({ createdAt: ago(30 * DAY) })], keyRecords: [revoked] }));
      expect(finding).toMatchObject({
        kind: 'key_orphan',
        fix: null,
        fixBlockedBecause: 'it is the only live key of its slot: revoking it would leave the tenant none',
      });
    });
  });

  describe('key age', () => {
    const old = {
      id: 'r1',
      platformKeyId: 'key_1',
      status: 'active',
      slot: 'default',
      generation: 1,
      activatedAt: ago(91 * DAY),
    };

    it('reports an active key past the rotation age with no schedule covering it', () => {
      expect(compareTenant(facts({ keys: [key({})], keyRecords: [old] }))).toEqual([
        expect.objectContaining({
          kind: 'key_rotation_overdue',
          evidence: expect.objectContaining({
            schedulesLookedFor: ['rotation:acme:default', 'rotation-fleet:default'],
          }),
        }),
      ]);
    });

    it('is satisfied by a tenant or a fleet schedule, and silent when schedules could not be read', () => {
      expect(kinds(facts({ keys: [key({})], keyRecords: [old], schedules: ['rotation:acme:default'] }))).toEqual([]);
      expect(kinds(facts({ keys: [key({})], keyRecords: [old], schedules: ['rotation-fleet:default'] }))).toEqual([]);
      expect(kinds(facts({ keys: [key({})], keyRecords: [old], schedules: null }))).toEqual([]);
    });

    it('leaves a key younger than the rotation age alone', () => {
      expect(kinds(facts({ keys: [key({})], keyRecords: [{ ...old, activatedAt: ago(89 * DAY) }] }))).toEqual([]);
    });
  });

  describe('plan', () => {
    const POLICY = { below: '1000000', to: '3000000', maxPerDay: '10000000', maxPerMonth: null };
    const record = (slot: string, status = 'active') => ({
      id: `r-${slot}`,
      platformKeyId: `key-${slot}`,
      status,
      slot,
      generation: 1,
      activatedAt: ago(DAY),
    });
    const schedule = (slot: string, everyMs = 90 * DAY, paused = false) => ({
      scheduleId: `rotation:acme:${slot}`,
      paused,
      everyMs,
    });
    /** A tenant on pro@2 with everything the plan says: default and web keys, its policy, a 90d schedule each. */
    function onPlan(plan: Partial<PlanFacts> = {}, fields: Partial<TenantFacts> = {}): TenantFacts {
      return facts({
        keys: undefined,
        keyRecords: [record('default'), record('web')],
        plan: {
          name: 'pro',
          version: 2,
          slots: ['default', 'web'],
          autoTopUp: POLICY,
          rotation: { interval: '90d', everyMs: 90 * DAY },
          policy: { ...POLICY },
          schedules: { default: schedule('default'), web: schedule('web') },
          ...plan,
        },
        ...fields,
      });
    }
    const planFindings = (f: TenantFacts) =>
      compareTenant(f)
        .filter((x) => x.kind.startsWith('plan_'))
        .map((x) => [x.kind, x.subject, x.evidence['reason'] ?? null, x.fix]);

    it('finds nothing for a tenant matching its plan, or on no plan', () => {
      expect(compareTenant(onPlan())).toEqual([]);
      // The same money written differently (numeric text from the database) is the same policy.
      expect(compareTenant(onPlan({ policy: { ...POLICY, below: '01000000' } }))).toEqual([]);
      const { plan: _plan, ...noPlan } = onPlan({ policy: null, schedules: {} });
      expect(compareTenant({ ...noPlan, keyRecords: [] })).toEqual([]);
    });

    it('reports a plan slot with no active key, report only, with the commands that converge it', () => {
      const [finding, ...rest] = compareTenant(
        onPlan({}, { keyRecords: [record('default'), record('web', 'revoked')] }),
      );
      expect(rest).toEqual([]);
      expect(finding).toMatchObject({
        kind: 'plan_slot_missing',
        subject: 'acme:web',
        externalRef: 'acme',
        fix: null,
        evidence: { plan: { name: 'pro', version: 2 }, slot: 'web' },
      });
      expect(finding).not.toHaveProperty('fixBlockedBecause');
      expect(finding!.evidence['advice']).toContain('tenantctl plans rollout pro');
      expect(finding!.evidence['advice']).toContain('tenantctl plans assign <ref> pro@2');
      // An unmanaged (imported) key holds its slot: key_unmanaged reports it, not the plan.
      expect(planFindings(onPlan({}, { keyRecords: [record('default'), record('web', 'unmanaged')] }))).toEqual([]);
    });

    it('reports a missing policy and each field of a policy that differs, and none when the plan has none', () => {
      expect(planFindings(onPlan({ policy: null }))).toEqual([['plan_policy_differs', 'acme', null, null]]);
      for (const field of ['below', 'to', 'maxPerDay'] as const)
        expect(planFindings(onPlan({ policy: { ...POLICY, [field]: '7' } })).map((f) => f[0])).toEqual([
          'plan_policy_differs',
        ]);
      expect(planFindings(onPlan({ policy: { ...POLICY, maxPerMonth: '50000000' } })).map((f) => f[0])).toEqual([
        'plan_policy_differs',
      ]);
      const [finding] = compareTenant(onPlan({ policy: { ...POLICY, to: '2000000' } }));
      expect(finding!.evidence).toMatchObject({ planPolicy: POLICY, record: { ...POLICY, to: '2000000' } });
      expect(planFindings(onPlan({ autoTopUp: null, policy: null }))).toEqual([]);
    });

    it('reports a slot schedule missing, paused or at another interval; not when unread or the plan has none', () => {
      expect(planFindings(onPlan({ schedules: { default: schedule('default', 30 * DAY), web: null } }))).toEqual([
        ['plan_schedule_differs', 'rotation:acme:default', 'the schedule rotates at another interval', null],
        ['plan_schedule_differs', 'rotation:acme:web', 'no rotation schedule', null],
      ]);
      expect(
        planFindings(onPlan({ schedules: { default: schedule('default'), web: schedule('web', 90 * DAY, true) } })),
      ).toEqual([['plan_schedule_differs', 'rotation:acme:web', 'the schedule is paused', null]]);
      expect(planFindings(onPlan({ schedules: null }))).toEqual([]);
      expect(planFindings(onPlan({ rotation: null, schedules: { default: null, web: null } }))).toEqual([]);
    });

    it('compares only tenants the plan still governs (active or suspended)', () => {
      expect(
        planFindings(
          onPlan({ policy: null }, { record: { externalRef: 'acme', subaccountId: 'sa_1', status: 'suspended' } }),
        ),
      ).toEqual([['plan_policy_differs', 'acme', null, null]]);
      for (const status of ['closing', 'closed', 'creating'])
        expect(
          planFindings(onPlan({ policy: null }, { record: { externalRef: 'acme', subaccountId: 'sa_1', status } })),
        ).toEqual([]);
      // On no plan: no slot is declared, so even a tenant without keys has no plan finding.
      expect(planFindings(facts({ keyRecords: [] }))).toEqual([]);
    });
  });
});
