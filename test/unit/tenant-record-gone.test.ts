import { describe, expect, it } from 'vitest';
import { boundary, TenantRecordGone } from '../../activities/failures.js';

/**
 * A tenant record a restore took is a wait only where fundWallet answers it (the transfer may be made); every other
 * step that meets it fails as before, TENANT_NOT_FOUND, not as an unclassified error retried forever.
 */
describe('TenantRecordGone at the activity boundary', () => {
  it('fails TENANT_NOT_FOUND, non-retryable, naming the import', async () => {
    const step = boundary(async (_: void) => {
      throw new TenantRecordGone('t-gone');
    });
    await expect(step()).rejects.toMatchObject({
      type: 'TENANT_NOT_FOUND',
      nonRetryable: true,
      message: expect.stringContaining('tenantctl import apply --only t-gone'),
    });
  });
});
