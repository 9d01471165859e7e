import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../src/main/gateway.js';
import { generateMasterKey } from '../../src/secrets/master-keys.js';
import { createTestContext, type TestContext } from '../harness/context.js';

/**
 * GATEWAY_OPS_PORT: a deployment publishes the gateway's public port only; /readyz and /metrics
 * (which tell an outsider what runs and how much) answer on a second listener kept internal.
 */
describe('gateway ops listener', () => {
  let ctx: TestContext;
  let gateway: RunningGateway;

  beforeAll(async () => {
    ctx = await createTestContext('gw-ops');
    gateway = await startGateway(
      loadConfig({
        DATABASE_URL: ctx.databaseUrl,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        TEMPORAL_TASK_QUEUE: ctx.taskQueue,
        SECRETS_KEYS: generateMasterKey('ops1'),
        GATEWAY_PORT: '0',
        GATEWAY_OPS_PORT: '0',
        LOG_LEVEL: 'silent',
      }),
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await ctx?.close();
  });

  it('serves /readyz and /metrics on the ops port only, /healthz on both', async () => {
    expect(gateway.opsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gateway.opsUrl).not.toBe(gateway.url);
    const status = async (url: string) => (await fetch(url)).status;
    expect(await status(`${gateway.url}/metrics`)).toBe(404);
    expect(await status(`${gateway.url}/readyz`)).toBe(404);
    expect(await status(`${gateway.url}/healthz`)).toBe(200);
    expect(await status(`${gateway.opsUrl}/readyz`)).toBe(200);
    expect(await status(`${gateway.opsUrl}/healthz`)).toBe(200);
    const metrics = await (await fetch(`${gateway.opsUrl}/metrics`)).text();
    // The public port's requests are counted on the ops port's /metrics.
    expect(metrics).toMatch(/route="\/healthz"/);
  });
});
