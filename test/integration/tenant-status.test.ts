import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { getTenantStatus } from '../../src/client/tenants/tenant-status.js';
import { appendAudit } from '../../src/db/audit-store.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Pool } from '../../src/db/pool.js';
import { insertTenantIfAbsent } from '../../src/db/tenants-store.js';
import { ensureDatabase } from '../../src/infra/database.js';
import { dropDatabase } from '../harness/database.js';

/** `tenantctl status` / `GET /v1/tenants/:ref` from our records: what an operator reads first. */
describe('tenant status from records', () => {
  let pool: Pool;
  const name = `t_status_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    pool = createPool(await ensureDatabase(inject('postgresAdminUrl'), name), { max: 4 });
    await migrate(pool);
  });
  afterAll(async () => {
    await pool?.end();
    await dropDatabase(inject('postgresAdminUrl'), name);
  });

  it('shows the 20 latest audit entries, oldest first, however long the trail', async () => {
    const externalRef = 'status-audit-1';
    await insertTenantIfAbsent(pool, { externalRef, name: 'Audit Co', createIdempotencyKey: 'k-status-audit-1' });
    for (let i = 0; i < 30; i++)
      await appendAudit(pool, { actor: 'test', action: `step.${String(i).padStart(2, '0')}`, externalRef });

    const view = await getTenantStatus({ pool }, externalRef);
    expect(view.recentAudit.map((a) => a.action)).toEqual(
      Array.from({ length: 20 }, (_, i) => `step.${String(i + 10).padStart(2, '0')}`),
    );
    expect(view.record?.status).toBe('creating');
  });
});
