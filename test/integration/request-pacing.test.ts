/**
 * The platform request budget every worker and gateway shares (issue 34): two processes' platform clients,
 * each paced by its own pacer over the same database, send 120 requests at once to a counting server. No
 * sliding second sees more than the rate limit, the requests are spread at the paced rate (not sent as a burst),
 * and a pacer asked far ahead looks again rather than queueing.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takePlatformRequestSlot } from '../../src/db/request-pacing-store.js';
import { createRequestPacer, PACED_SHARE } from '../../src/db/request-pacer.js';
import { createPlatformClient } from '../../src/platform/index.js';
import { createTestContext, type TestContext } from '../harness/context.js';

const LIMIT = 20;

describe('the shared platform request budget', () => {
  let ctx: TestContext;
  let server: Server;
  let base: string;
  const arrivals: number[] = [];

  beforeAll(async () => {
    ctx = await createTestContext('request-pacing');
    server = createServer((_request, response) => {
      arrivals.push(performance.now());
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ data: { id: 'sa_1', name: 'x', status: 'active', externalRef: 'x' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/api/v1`;
  });
  afterAll(async () => {
    server?.close();
    await ctx?.close();
  });

  it('keeps two processes` requests within the limit in every sliding second, at the paced rate', async () => {
    const clients = [0, 1].map(() =>
      createPlatformClient({
        baseUrl: base,
        platformKey: 'svpk_pacing_test_key',
        pace: createRequestPacer(ctx.pool, LIMIT),
      }),
    );
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        clients[i % 2]!.getSubaccount({ subaccountId: 'sa_1' }).catch(() => undefined),
      ),
    );
    const took = performance.now() - started;
    expect(arrivals).toHaveLength(120);
    arrivals.sort((a, b) => a - b);
    let peak = 0;
    for (let i = 0, j = 0; i < arrivals.length; i++) {
      while (arrivals[i]! - arrivals[j]! >= 1000) j++;
      peak = Math.max(peak, i - j + 1);
    }
    expect(peak).toBeLessThanOrEqual(LIMIT);
    // Spread at the paced rate: 120 requests at 18/s take about 6.6 s (sent at once, they would take milliseconds).
    expect(took).toBeGreaterThanOrEqual((119 / (LIMIT * PACED_SHARE)) * 1000 - 300);
    expect(took).toBeLessThan(15_000);
  });

  it('takes no instant more than the longest wait ahead: a caller looks again instead', async () => {
    // Instants a second apart are taken up to two seconds ahead, then refused (null) without being taken. The
    // budget starts idle (the test before may have left an instant a few ms ahead).
    await ctx.pool.query(`UPDATE platform_request_pacing SET next_at = clock_timestamp() - interval '1 second'`);
    const answers: Array<number | null> = [];
    for (let i = 0; i < 4; i++) answers.push(await takePlatformRequestSlot(ctx.pool, 1000, 2000));
    expect(answers.slice(0, 3).every((wait) => wait !== null)).toBe(true);
    expect(answers[3]).toBeNull();
    expect(answers[2]).toBeGreaterThan(1500);
  });
});
