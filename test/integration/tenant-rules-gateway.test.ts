import { ScheduleNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdoption, startRotation } from '../../src/client/keys/start-rotation.js';
import { startKeyIssue } from '../../src/client/keys/key-slots.js';
import { rotationScheduleId } from '../../src/domain/ids.js';
import { TenantRefusedError } from '../../src/domain/tenant-rules.js';
import { runCli } from '../harness/cli.js';
import { HARNESS_OPERATOR } from '../harness/operator-gateway.js';
import { workflowExists } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * "May this tenant be rotated / adopted / issued a key" is checked once, by the client starters every surface
 * goes through (src/domain/tenant-rules.ts): the gateway, tenantctl (a client of the gateway) and a TypeScript
 * caller with our records are all refused before anything starts, with one error naming the field and the rule.
 * No worker runs here: a run that started would be the bug.
 */
type Answer = { status: number; json: { error?: { code: string; message: string; fields?: string[] } } };

describe('tenant rules at the starters', () => {
  // The gateway tenantctl talks to, with an admin operator (fleet.manage makes schedules).
  let env: OrchestratorEnv;
  const send = async (method: string, path: string, body: unknown = {}): Promise<Answer> => {
    const response = await fetch(`${env.cliEnv['TENANTCTL_GATEWAY_URL']}${path}`, {
      method,
      headers: { authorization: `Bearer ${HARNESS_OPERATOR.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Answer['json'] };
  };
  const refused = (answer: Answer, code: string) => {
    expect(answer.status, JSON.stringify(answer.json)).toBe(409);
    expect(answer.json.error?.code).toBe(code);
    expect(answer.json.error?.fields).toEqual(['externalRef']);
  };
  const nothingStarted = async (ref: string) => {
    for (const id of [`rotate:${ref}:default`, `key:${ref}:ci`])
      expect(await workflowExists(env.client, id)).toBe(false);
  };

  beforeAll(async () => {
    env = await createOrchestratorEnv('tenant-rules');
    for (const [ref, status] of [
      ['tr-closing', 'closing'],
      ['tr-closed', 'closed'],
      ['tr-suspended', 'suspended'],
    ])
      await env.pool.query(
        `INSERT INTO tenants (external_ref, name, subaccount_id, status, create_idempotency_key)
         VALUES ($1::text, 'Rules', $2::text, $3::text, $4::text)`,
        [ref, `sub_${ref}`, status, `k-${ref}`],
      );
    // An imported key, so an adoption would otherwise be allowed.
    await env.pool.query(
      `INSERT INTO tenant_keys (external_ref, slot, generation, key_name, platform_key_id, status)
       SELECT external_ref, 'default', 1, 'imported-' || external_ref, 'key_' || external_ref, 'unmanaged'
         FROM tenants`,
    );
  });
  afterAll(async () => {
    await env?.close();
  });

  it('refuses to rotate, adopt for, schedule or issue a key to a closing or closed tenant: 409 TENANT_CLOSED', async () => {
    for (const ref of ['tr-closing', 'tr-closed']) {
      refused(await send('POST', `/v1/tenants/${ref}/rotate`), 'TENANT_CLOSED');
      refused(await send('POST', `/v1/tenants/${ref}/adopt`), 'TENANT_CLOSED');
      refused(await send('POST', `/v1/tenants/${ref}/keys/ci/issue`), 'TENANT_CLOSED');
      refused(await send('POST', '/v1/rotation-schedules', { externalRef: ref, every: '30d' }), 'TENANT_CLOSED');
      await nothingStarted(ref);
      await expect(env.client.schedule.getHandle(rotationScheduleId(ref, 'default')).describe()).rejects.toBeInstanceOf(
        ScheduleNotFoundError,
      );
    }
  });

  it('refuses to rotate or issue a key to a suspended tenant (TENANT_NOT_ACTIVE) but schedules its rotation', async () => {
    refused(await send('POST', '/v1/tenants/tr-suspended/rotate'), 'TENANT_NOT_ACTIVE');
    refused(await send('POST', '/v1/tenants/tr-suspended/adopt'), 'TENANT_NOT_ACTIVE');
    refused(await send('POST', '/v1/tenants/tr-suspended/keys/ci/issue'), 'TENANT_NOT_ACTIVE');
    await nothingStarted('tr-suspended');
    const scheduled = await send('POST', '/v1/rotation-schedules', { externalRef: 'tr-suspended', every: '30d' });
    expect(scheduled.status, JSON.stringify(scheduled.json)).toBe(200);
    await env.client.schedule.getHandle(rotationScheduleId('tr-suspended', 'default')).delete();
  });

  it('refuses through tenantctl and the TypeScript starters with the same rule', async () => {
    const cli = await runCli(['rotate-key', 'tr-closing'], env.cliEnv);
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain('tr-closing is closing: its keys are not rotated');
    const options = { taskQueue: env.taskQueue, db: env.pool };
    await expect(startRotation(env.client, { externalRef: 'tr-closed' }, options)).rejects.toMatchObject({
      name: 'TenantRefusedError',
      code: 'TENANT_CLOSED',
      field: 'externalRef',
    });
    await expect(
      startAdoption({ client: env.client, db: env.pool }, { externalRef: 'tr-suspended' }, options),
    ).rejects.toBeInstanceOf(TenantRefusedError);
    await expect(
      startKeyIssue({ client: env.client, pool: env.pool }, { externalRef: 'tr-closing', slot: 'ci' }, options),
    ).rejects.toMatchObject({ code: 'TENANT_CLOSED' });
    await nothingStarted('tr-closing');
    await nothingStarted('tr-closed');
  });
});
