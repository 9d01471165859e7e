import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import {
  buildTestGateway,
  listenOnLoopback,
  seedRegistration,
  signedDelivery,
  TEST_CODEC_TOKEN,
  waitFor,
} from '../harness/gateway-app.js';
import { cachedCliDir } from '../../src/infra/temporal-cli.js';
import { startRotation } from '../../src/client/keys/start-rotation.js';
import { createDataConverter } from '../../src/secrets/payload-codec.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createRotationEnv, type RotationEnv } from '../harness/rotation-env.js';

const run = promisify(execFile);
const temporalCli = process.env.TEMPORAL_CLI_PATH ?? `${cachedCliDir()}/temporal`;

/**
 * The Temporal CLI reads histories through the gateway's codec exactly as an operator does:
 * `temporal workflow show --codec-endpoint <gateway>/codec`. The CLI sends protojson, which omits an
 * empty payload list: a signal without input is decoded as `{}`.
 */
describe('temporal workflow show through the gateway codec', () => {
  let env: RotationEnv;
  let gateway: GatewayApp & { vault: ReturnType<typeof buildTestGateway>['vault'] };
  let url: string;

  const show = async (workflowId: string) => {
    const args = [
      'workflow',
      'show',
      '-w',
      workflowId,
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
      '--codec-endpoint',
      `${url}/codec`,
      '--codec-auth',
      `Bearer ${TEST_CODEC_TOKEN}`,
      '--output',
      'json',
    ];
    const result = await run(temporalCli, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        stdout: error.stdout ?? '',
        stderr: `exit ${error.code}: ${error.stderr ?? ''}`,
      }),
    );
    return { stdout: result.stdout, stderr: result.stderr };
  };

  /** Every payload of the shown history: its encoding and its data, decoded from the CLI's base64. */
  const payloadsOf = (stdout: string) => {
    const found: Array<{ encoding: string; data: string }> = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object') {
        const record = value as { metadata?: { encoding?: string }; data?: string };
        if (record.metadata?.encoding !== undefined)
          found.push({
            encoding: Buffer.from(record.metadata.encoding, 'base64').toString(),
            data: Buffer.from(record.data ?? '', 'base64').toString(),
          });
        Object.values(value).forEach(walk);
      }
    };
    walk(JSON.parse(stdout));
    return found;
  };

  beforeAll(async () => {
    env = await createRotationEnv('gw-codec-cli');
    gateway = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.cliEnv.SECRETS_KEYS!),
    });
    url = await listenOnLoopback(gateway);
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('decodes an encrypted history holding a signal without input', async () => {
    const sealing = new Client({
      connection: env.client.connection,
      namespace: inject('temporalNamespace'),
      dataConverter: createDataConverter(parseMasterKeys(env.cliEnv.SECRETS_KEYS!)),
    });
    // Nobody polls this queue: the history is the start, a signal without input, and the termination.
    const handle = await sealing.workflow.start('onboardTenant', {
      taskQueue: `${env.taskQueue}-idle`,
      workflowId: `onboard:codec-cli-${Date.now()}`,
      args: [{ externalRef: 'codec-cli-ref', name: 'Codec Cli' }],
    });
    await handle.signal('parentFunded');
    await handle.terminate('codec test: the history is what is checked');
    const raw = JSON.stringify((await env.client.workflow.getHandle(handle.workflowId).fetchHistory()).events);
    expect(raw).not.toContain('codec-cli-ref'); // sealed in Temporal

    const { stdout, stderr } = await show(handle.workflowId);
    expect(stderr).toBe('');
    expect(stdout).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED');
    const payloads = payloadsOf(stdout);
    expect(payloads.map((p) => p.encoding)).not.toContain('binary/encrypted');
    expect(payloads.some((p) => p.encoding === 'json/plain' && p.data.includes('codec-cli-ref'))).toBe(true);
  });

  it('shows the history of every workflow type the gateway and the CLI start', async () => {
    await env.onboard('codec-all');
    const ids = ['onboard:codec-all'];
    await (
      await startRotation(
        env.client,
        { externalRef: 'codec-all', emergency: true, reason: 'codec check' },
        { taskQueue: env.taskQueue },
      )
    ).result();
    ids.push('rotate:codec-all:default');
    for (const action of ['suspend', 'resume', 'close'] as const) {
      await (
        await startLifecycle(
          env.client,
          action,
          { externalRef: 'codec-all', reason: `codec check ${action}` },
          { taskQueue: env.taskQueue },
        )
      ).result();
      ids.push(`${action}:codec-all`);
    }
    const hook = await seedRegistration(env.pool, gateway.vault);
    const delivery = signedDelivery(hook.secrets[0]!.secret, { webhookId: hook.secrets[0]!.webhookId });
    expect(
      (
        await gateway.app.inject({
          method: 'POST',
          url: `/webhooks/registry/${hook.registrationId}`,
          headers: delivery.headers,
          payload: delivery.raw,
        })
      ).statusCode,
    ).toBe(202);
    const registryId = `registry-delivery:${delivery.deliveryId}`;
    await waitFor(
      () =>
        env.client.workflow
          .getHandle(registryId)
          .describe()
          .then(
            (d) => d.status.name,
            () => 'NOT_FOUND',
          ),
      (s) => s === 'COMPLETED',
      30_000,
      registryId,
    );
    ids.push(registryId);

    for (const workflowId of ids) {
      const { stdout, stderr } = await show(workflowId);
      expect(stderr, workflowId).toBe('');
      expect(stdout, workflowId).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
      const payloads = payloadsOf(stdout);
      expect(payloads.length, workflowId).toBeGreaterThan(0);
      expect(
        payloads.some((p) => p.data.includes(workflowId.startsWith('registry') ? delivery.deliveryId : 'codec-all')),
        workflowId,
      ).toBe(true);
    }
  });
});
