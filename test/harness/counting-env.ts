import { createActivities, type Activities } from '../../activities/index.js';
import { countStatements } from './count-statements.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertTenantIfAbsent, recordSubaccount, setTenantStatus } from '../../src/db/tenants-store.js';
import type { TenantStatus } from '../../src/domain/tenant-rules.js';
import { createLogger } from '../../src/infra/log.js';
import { createPlatformClient, type PlatformClient } from '../../src/platform/index.js';
import { generateMasterKey, parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault } from '../../src/secrets/vault.js';
import { DEFAULT_PLATFORM_KEY, startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { createTestContext, type TestContext } from './context.js';

/**
 * The worker's activities over a pool of one connection whose statements are counted, against the simulator: what
 * the tests that pin a step's round trips to Postgres stand on.
 */
export interface CountingEnv {
  ctx: TestContext;
  sim: RunningSimulator;
  pool: Pool;
  activities: Activities;
  /** A client of the simulator with the parent's platform key. */
  platform(): PlatformClient;
  /** Statements the pool has sent so far. */
  statements(): number;
  /** A tenant recorded with its sub-account (made on the simulator) in `status`; returns the sub-account id. */
  recordedTenant(externalRef: string, status: TenantStatus): Promise<string>;
  close(): Promise<void>;
}

export async function createCountingEnv(name: string): Promise<CountingEnv> {
  const ctx = await createTestContext(name);
  const sim = await startSimulator();
  const pool = createPool(ctx.databaseUrl, { max: 1 });
  const statements = countStatements(pool);
  const platform = () => createPlatformClient({ baseUrl: sim.apiBase, platformKey: DEFAULT_PLATFORM_KEY });
  const activities = createActivities({
    pool,
    platform: platform(),
    vault: createVault(parseMasterKeys(generateMasterKey(name))),
    logger: createLogger({ level: 'silent' }),
  });
  async function recordedTenant(externalRef: string, status: TenantStatus): Promise<string> {
    await insertTenantIfAbsent(ctx.pool, { externalRef, name: externalRef, createIdempotencyKey: `c-${externalRef}` });
    const { subaccount } = await platform().createSubaccount({
      name: externalRef,
      externalRef,
      idempotencyKey: `c-${externalRef}`,
    });
    await recordSubaccount(ctx.pool, externalRef, subaccount.id);
    await setTenantStatus(ctx.pool, externalRef, status);
    return subaccount.id;
  }
  return {
    ctx,
    recordedTenant,
    sim,
    pool,
    activities,
    platform,
    statements,
    close: async () => {
      await pool.end();
      await sim.close();
      await ctx.close();
    },
  };
}
