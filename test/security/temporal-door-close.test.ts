/**
 * The Temporal door holds the server's close policy (issue 45): a close started straight in Temporal (the Web
 * UI's Start Workflow, any Temporal client) meets the same CLOSE_DELAY minimum as one over `/v1`, and says the
 * same thing when refused. A refused run fails at once with INVALID_INPUT and leaves nothing behind (no close
 * schedule, the tenant as it was), so the next, good close of the same tenant starts anew and completes. Only an
 * admin's close through the gateway is sooner: it reaches the run as the server's sealed grant, which nobody
 * else can make or move to another close.
 */
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { lifecycleWorkflowId } from '../../src/domain/ids.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { cancelCloseUpdate, closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import { listenGatewayOver, waitFor } from '../harness/gateway-app.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { callAs } from '../harness/operator-gateway.js';
import { refusalOf } from '../harness/refused-run.js';

const backend = generateOperator('door-backend', 'backend');
const admin = generateOperator('door-admin', 'admin');
const parsed = parseOperatorList([backend.entry, admin.entry].join(','));
if (!parsed.ok) throw new Error(parsed.problems.join('; '));

/** The server's minimum, the worker's and the gateway's alike. */
const CLOSE_DELAY = '1h';
const MINIMUM_RULE = "after: must be at least 1h (CLOSE_DELAY, the server's minimum, which only an admin may undercut)";

describe('closeTenant started straight in Temporal holds the server close policy', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp;
  let url: string;
  const startInTemporal = (client: Client, input: Record<string, unknown>) =>
    client.workflow.start('closeTenant', {
      taskQueue: env.taskQueue,
      workflowId: lifecycleWorkflowId('close', input['externalRef'] as string),
      args: [input],
    });
  const recordsOf = async (externalRef: string) =>
    (
      await env.pool.query<{ status: string; schedules: number }>(
        `SELECT (SELECT status FROM tenants WHERE external_ref = $1::text) AS status,
                (SELECT count(*)::int FROM close_schedules WHERE external_ref = $1::text) AS schedules`,
        [externalRef],
      )
    ).rows[0]!;
  /** An admin's close at once over /v1 (the server's grant): it must start anew and complete. */
  async function adminClosesAtOnce(externalRef: string): Promise<string> {
    const started = await callAs(url, 'POST', `/v1/tenants/${externalRef}/close`, admin.token, {
      reason: 'the good close',
      after: '0',
    });
    expect(started.status, JSON.stringify(started.json)).toBe(202);
    const run = env.client.workflow.getHandle(lifecycleWorkflowId('close', externalRef));
    expect(await run.result()).toMatchObject({ status: 'closed', alreadyClosed: false });
    expect(await recordsOf(externalRef)).toEqual({ status: 'closed', schedules: 0 });
    return started.json.data.runId as string;
  }

  beforeAll(async () => {
    env = await createOrchestratorEnv('sec-door-close', {}, { lifecycle: { closeDelay: CLOSE_DELAY } });
    await env.startOrchestratorWorker();
    ({ gateway, url } = await listenGatewayOver(env, {
      operators: createOperatorDirectory(parsed.operators),
      closeDelay: CLOSE_DELAY,
    }));
    for (const externalRef of ['door-0s', 'door-zero', 'door-default', 'door-forged'])
      await (
        await startOnboarding(
          env.client,
          { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd: '5000' },
          { taskQueue: env.taskQueue },
        )
      ).result();
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('refuses after "0s" at once naming after, as /v1 does; nothing is scheduled or closing; a good close completes', async () => {
    const refused = await refusalOf(
      await startInTemporal(env.client, { externalRef: 'door-0s', reason: 'customer left', after: '0s' }),
    );
    expect(refused).toMatchObject({ type: 'INVALID_INPUT', problems: [MINIMUM_RULE] });
    expect(await recordsOf('door-0s')).toEqual({ status: 'active', schedules: 0 });

    const http = await callAs(url, 'POST', '/v1/tenants/door-0s/close', backend.token, {
      reason: 'customer left',
      after: '0s',
    });
    expect(http.status).toBe(400);
    expect(http.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['after'] });
    expect(http.json.error.message).toBe(`invalid input: ${refused.problems.join('; ')}`);

    await adminClosesAtOnce('door-0s');
  });

  it('refuses after "0" at once (no workflow task failing for ever); the next close is not joined to it', async () => {
    const first = await startInTemporal(env.client, { externalRef: 'door-zero', reason: 'customer left', after: '0' });
    const refused = await refusalOf(first);
    expect(refused).toMatchObject({ type: 'INVALID_INPUT', problems: [MINIMUM_RULE] });
    expect(await recordsOf('door-zero')).toEqual({ status: 'active', schedules: 0 });
    expect(await adminClosesAtOnce('door-zero')).not.toBe(first.firstExecutionRunId);
  });

  it('takes CLOSE_DELAY for a close started without after, as a starter does: suspended, closing only then', async () => {
    const handle = await startInTemporal(env.client, { externalRef: 'door-default', reason: 'customer left' });
    const scheduled = await waitFor(
      async () =>
        (
          await env.pool.query<{ closeAt: Date }>(
            `SELECT close_at AS "closeAt" FROM close_schedules WHERE external_ref = 'door-default' AND state = 'scheduled'`,
          )
        ).rows[0],
      (row) => row !== undefined,
      30_000,
      'the close schedule',
    );
    const startedAt = (await handle.describe()).startTime.getTime();
    expect(scheduled!.closeAt.getTime() - startedAt).toBeGreaterThan(3_600_000 - 60_000);
    expect((await recordsOf('door-default')).status).toBe('suspended');
    await waitFor(
      () => handle.query(closeStatusQuery).catch(() => null),
      (status) => status?.stage === 'scheduled',
      30_000,
      'the close window',
    );
    await handle.executeUpdate(cancelCloseUpdate, { args: [{ operator: 'test', reason: 'test over' }] });
    expect(await handle.result()).toMatchObject({ status: 'close_cancelled' });
    expect((await recordsOf('door-default')).status).toBe('active');
  });

  it("refuses a grant nobody at the server made, and one moved from another tenant's close, naming closeSooner", async () => {
    const forged = await refusalOf(
      await startInTemporal(env.client, {
        externalRef: 'door-forged',
        reason: 'customer left',
        closeSooner: 'v1.k.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA',
      }),
    );
    // Without `after` the close would take the minimum: only the grant is refused.
    expect(forged).toMatchObject({ type: 'INVALID_INPUT', problems: [expect.stringMatching(/^closeSooner: /)] });

    // The admin's grant of door-0s's close, as its history shows it, opens for that close only.
    const history = await env.client.workflow.getHandle(lifecycleWorkflowId('close', 'door-0s')).fetchHistory();
    const input = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
    const grant = (JSON.parse(Buffer.from(input!).toString('utf8')) as { closeSooner?: string }).closeSooner;
    expect(grant).toMatch(/^v1\./);
    const moved = await refusalOf(
      await startInTemporal(env.client, {
        externalRef: 'door-forged',
        reason: 'customer left',
        after: '0',
        closeSooner: grant,
      }),
    );
    expect(moved.problems).toEqual([expect.stringMatching(/^closeSooner: /), MINIMUM_RULE]);
    expect(await recordsOf('door-forged')).toEqual({ status: 'active', schedules: 0 });

    const http = await callAs(url, 'POST', '/v1/tenants/door-forged/close', admin.token, {
      reason: 'customer left',
      closeSooner: grant,
    });
    expect(http.status).toBe(400);
    expect(http.json.error).toMatchObject({ code: 'INVALID_INPUT', fields: ['closeSooner'] });
  });
});
