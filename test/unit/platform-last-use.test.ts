import { afterEach, describe, expect, it } from 'vitest';
import { createPlatformClient, lastUseMoved, readKeyUse, type LastUse } from '../../src/platform/index.js';
import { sendData, startScriptedServer, type ScriptedServer } from '../harness/scripted-server.js';

const AT = '2026-11-23T08:00:00.000Z';
const LATER = '2026-11-23T08:05:00.000Z';

describe('last use read from a key record wherever a reasonable platform puts it', () => {
  it.each([
    ['top-level camelCase', { id: 'k', lastUsedAt: AT }, 'lastUsedAt'],
    ['top-level snake_case', { id: 'k', last_used_at: AT }, 'last_used_at'],
    [
      'nested under usage (the platform of issue 15)',
      {
        id: 'k',
        state: 'active',
        tokenHint: 'svsk_…ab',
        usage: { lastUsedAt: AT, requestCount: 12 },
        createdAt: '2026-01-01T00:00:00.000Z',
        revokedAt: null,
      },
      'usage.lastUsedAt',
    ],
    ['nested snake_case', { id: 'k', usage: { last_used_at: AT, request_count: 3 } }, 'usage.last_used_at'],
    ['an object named last use', { id: 'k', lastUsed: { at: AT, ip: '203.0.113.7' } }, 'lastUsed.at'],
    ['a snake_case object named last use', { id: 'k', last_use: { timestamp: AT } }, 'last_use.timestamp'],
    ['two levels down', { id: 'k', stats: { activity: { lastSeenAt: AT } } }, 'stats.activity.lastSeenAt'],
    ['epoch milliseconds', { id: 'k', lastUsedTime: Date.parse(AT) }, 'lastUsedTime'],
  ])('finds a use %s', (_name, record, field) => {
    expect(readKeyUse(record).lastUse).toEqual({ state: 'seen', at: AT, field });
  });

  it('keeps the use counter where one is shown', () => {
    expect(readKeyUse({ id: 'k', usage: { lastUsedAt: AT, requestCount: 12 } }).useCount).toBe(12);
    expect(readKeyUse({ id: 'k', use_count: 4, last_used_at: AT }).useCount).toBe(4);
    expect(readKeyUse({ id: 'k', count: 4, lastUsedAt: AT }).useCount).toBeUndefined();
  });

  it.each([
    ['lastUsedAt: null', { id: 'k', lastUsedAt: null }],
    ['usage.lastUsedAt: null with a zero counter', { id: 'k', usage: { lastUsedAt: null, requestCount: 0 } }],
    ['lastUsed: { at: null }', { id: 'k', lastUsed: { at: null } }],
    ['last_used: null', { id: 'k', last_used: null }],
    ['a zero use counter alone', { id: 'k', usage: { requestCount: 0 } }],
  ])('reads "never used" from %s', (_name, record) => {
    expect(readKeyUse(record).lastUse.state).toBe('never');
  });

  it('takes the latest of several readable last-use fields, so a stale one never hides a use', () => {
    expect(readKeyUse({ id: 'k', lastUsedAt: AT, usage: { lastUsedAt: LATER } }).lastUse).toMatchObject({
      state: 'seen',
      at: LATER,
    });
  });

  it.each([
    ['an unknown timestamp', { id: 'k', createdAt: AT, touchedAt: LATER }, ['touchedAt']],
    ['a usage object we cannot read', { id: 'k', usage: { p95LatencyMs: 12 } }, ['usage']],
    ['a last-use object without a time', { id: 'k', lastUsed: { ip: '203.0.113.7' } }, ['lastUsed']],
    ['an unreadable last-use value', { id: 'k', lastUsedAt: 'yesterday-ish' }, ['lastUsedAt']],
    ['a counter of uses without a time', { id: 'k', usage: { requestCount: 7 } }, ['usage.requestCount']],
    [
      '"never" contradicted by a positive counter',
      { id: 'k', usage: { lastUsedAt: null, requestCount: 7 } },
      ['usage.lastUsedAt', 'usage.requestCount'],
    ],
    ['an unknown nested timestamp', { id: 'k', metadata: { audit: { lastTouch: AT } } }, ['metadata.audit.lastTouch']],
  ])('says unknown (never "no use") for %s', (_name, record, candidates) => {
    expect(readKeyUse(record).lastUse).toEqual({ state: 'unknown', reason: 'unrecognised', candidates });
  });

  it('says "not shown" only when nothing could be last use, ignoring the record\'s own life and extra fields', () => {
    const record = {
      id: 'k',
      name: 'n',
      status: 'active',
      createdAt: AT,
      revokedAt: null,
      updatedAt: LATER,
      expires_at: LATER,
      metadata: { createdBy: { kind: 'parent', id: 'p' }, labels: {} },
    };
    expect(readKeyUse(record).lastUse).toEqual({ state: 'unknown', reason: 'not_shown', candidates: [] });
  });

  it('reads extra nested fields beside a recognised last use without doubt', () => {
    const record = {
      id: 'k',
      usage: { lastUsedAt: AT, requestCount: 1 },
      metadata: { createdBy: { id: 'p' } },
      updatedAt: LATER,
    };
    expect(readKeyUse(record).lastUse).toMatchObject({ state: 'seen', at: AT });
  });
});

describe('whether last use moved between the gate and the revoke', () => {
  const seen = (at: string): LastUse => ({ state: 'seen', at, field: 'lastUsedAt' });
  const never: LastUse = { state: 'never', field: 'lastUsedAt' };
  const notShown: LastUse = { state: 'unknown', reason: 'not_shown', candidates: [] };
  const unreadable: LastUse = { state: 'unknown', reason: 'unrecognised', candidates: ['x'] };
  it.each([
    ['same time', seen(AT), seen(AT), false],
    ['a later use', seen(AT), seen(LATER), true],
    ['first use after "never"', never, seen(AT), true],
    ['still never', never, never, false],
    ['still not shown', notShown, notShown, false],
    ['now unreadable', seen(AT), unreadable, true],
    ['now shown where it was not', notShown, seen(AT), true],
  ])('%s', (_name, before, after, moved) => {
    expect(lastUseMoved(before, after)).toBe(moved);
  });
  it('counts a higher use counter as a use, even at the same time', () => {
    expect(lastUseMoved(seen(AT), seen(AT), 3, 4)).toBe(true);
    expect(lastUseMoved(seen(AT), seen(AT), 3, 3)).toBe(false);
  });
});

describe('delivery records read tolerantly', () => {
  let server: ScriptedServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  async function deliveriesOf(items: unknown[]) {
    server = await startScriptedServer((_req, res) => sendData(res, 200, { items, nextCursor: null }));
    const client = createPlatformClient({ baseUrl: server.apiBase, personalToken: 'sv_humanToken42' });
    return (await client.listWebhookDeliveries({ projectId: 'proj_1', webhookId: 'wh_1' })).deliveries;
  }

  it.each([
    ['flat', { deliveryId: 'd1', event: 'image.pushed', status: 'succeeded', responseCode: 202, error: null }],
    [
      'outcome + lastResponse (the platform of issue 15)',
      {
        id: 'd1',
        event: 'image.pushed',
        outcome: 'succeeded',
        lastResponse: { status: 202, body: 'ok' },
        lastError: null,
      },
    ],
    [
      'snake_case',
      { delivery_id: 'd1', event_type: 'image.pushed', delivery_status: 'succeeded', response_code: '202' },
    ],
    [
      'nested response and status object',
      { id: 'd1', event: { name: 'image.pushed' }, status: { state: 'succeeded' }, response: { statusCode: 202 } },
    ],
  ])('reads outcome and status code from %s records', async (_name, record) => {
    const [delivery] = await deliveriesOf([record]);
    expect(delivery).toMatchObject({
      deliveryId: 'd1',
      event: 'image.pushed',
      rawStatus: 'succeeded',
      responseCode: 202,
    });
  });

  it('reads error details from error, lastError (object or text) and failureReason', async () => {
    const deliveries = await deliveriesOf([
      {
        id: 'd1',
        outcome: 'failed',
        lastError: { message: 'Receiver answered HTTP 500.' },
        lastResponse: { status: 500 },
      },
      { id: 'd2', status: 'failed', error: 'timed out' },
      { id: 'd3', status: 'failed', failure_reason: 'connection refused' },
    ]);
    expect(deliveries.map((d) => [d.rawStatus, d.error, d.responseCode ?? null])).toEqual([
      ['failed', 'Receiver answered HTTP 500.', 500],
      ['failed', 'timed out', null],
      ['failed', 'connection refused', null],
    ]);
  });

  it('takes an HTTP code given as the status for the response code, not for the outcome', async () => {
    const [delivery] = await deliveriesOf([{ id: 'd1', status: 202, result: 'delivered' }]);
    expect(delivery).toMatchObject({ rawStatus: 'delivered', responseCode: 202 });
  });
});
