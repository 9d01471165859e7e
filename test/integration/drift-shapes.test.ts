import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listFindings } from '../../src/db/drift-findings-store.js';
import { SIM_SHAPES } from '../../src/sim/choices.js';
import { createDriftEnv, type DriftEnv } from '../harness/drift-env.js';

/**
 * Drift against more than one platform shape (issue 15): orphan keys of ours are revoked only when the
 * platform shows them quiet, wherever it puts last use, and the fix re-reads the key right before the
 * revoke: a use since the check saw it refuses the fix (close is the only revoke on purpose).
 */
describe.each(['default', 'alt'] as const)('drift against the %s platform shape', (shape) => {
  let env: DriftEnv;
  beforeAll(async () => {
    env = await createDriftEnv(
      `drift-${shape}`,
      { policies: { key_orphan: 'fix' }, quietPeriodMs: 1_000 },
      { choices: SIM_SHAPES[shape] },
    );
  }, 120_000);
  afterAll(async () => env?.close());

  const use = async (token: string) => {
    const response = await fetch(`${env.sim.apiBase}/projects`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
  };
  const keyOf = (id: string) => env.sim.state().apiKeys.find((k) => k.id === id)!;

  it('revokes a quiet orphan key of ours, keeps one in use, and the fix refuses a use since the check', async () => {
    const ref = `drift-${shape}-1`;
    const { subaccountId } = await env.onboard(ref);
    const quiet = await env.api('POST', `/subaccounts/${subaccountId}/api-keys/create`, { name: 'tpo-default-g8-a1' });
    const busy = await env.api('POST', `/subaccounts/${subaccountId}/api-keys/create`, { name: 'tpo-default-g9-a1' });
    // Older than the quiet period (1 s) by the time the check looks; `busy` is used just before it.
    await new Promise((r) => setTimeout(r, 1_500));
    await use(String(busy.token));

    const result = await env.check({ externalRef: ref });
    expect(result.openTotal).toBeGreaterThanOrEqual(1);
    expect(keyOf(String(quiet.id)).status).toBe('revoked');
    expect(keyOf(String(busy.id)).status).toBe('active');
    const findings = (await listFindings(env.pool, { limit: 100 })).filter(
      (f) => f.kind === 'key_orphan' && f.externalRef === ref,
    );
    const busyFinding = findings.find((f) => f.subject === String(busy.id))!;
    expect(busyFinding.fixedAt).toBeNull();

    // The key is used again after the check saw it: even a fix asked with no quiet period refuses.
    await use(String(busy.token));
    const outcome = await env.activities.revokeOrphanKey({ findingId: busyFinding.id, quietPeriodMs: 0 });
    expect(outcome).toEqual({ outcome: 'no_longer_safe', why: 'the key was used since the check saw it' });
    expect(keyOf(String(busy.id)).status).toBe('active');
  });
});
