import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { createInboxPruner } from '../../src/gateway/webhooks/inbox-pruner.js';
import { computeSignature } from '../../src/gateway/webhooks/signature.js';
import { buildTestGateway, newDeliveryId, seedRegistration, type SeededRegistration } from '../harness/gateway-app.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createVault, type Vault } from '../../src/secrets/vault.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/** Replays, conflicts, malformed signatures and retention of the registry webhook inbox. */
describe('registry webhook receiver: replay protection and inbox retention', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp & { vault: ReturnType<typeof buildTestGateway>['vault'] };
  let hook: SeededRegistration;
  let queries = 0;

  /** A delivery as the platform sends it, with a chosen timestamp and payload, signed over the exact bytes. */
  const delivery = (fields: { deliveryId?: string; timestamp?: string; tag?: string } = {}) => {
    const deliveryId = fields.deliveryId ?? newDeliveryId('rp');
    const { secret, webhookId } = hook.secrets[0]!;
    const raw = Buffer.from(
      JSON.stringify({
        event: 'image.pushed',
        deliveryId,
        webhookId,
        payload: { image: 'registry.test/app', tag: fields.tag ?? 'v1' },
        timestamp: fields.timestamp ?? new Date().toISOString(),
      }),
    );
    return {
      deliveryId,
      raw,
      headers: { 'content-type': 'application/json', 'x-service-signature': computeSignature(secret, raw) },
    };
  };
  const post = (d: { raw: Buffer; headers: Record<string, string> }, registrationId = hook.registrationId) =>
    gateway.app.inject({
      method: 'POST',
      url: `/webhooks/registry/${registrationId}`,
      headers: d.headers,
      payload: d.raw,
    });
  const inboxCount = async (deliveryId: string) =>
    (await env.pool.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE delivery_id = $1`, [deliveryId])).rows[0]
      .n as number;

  beforeAll(async () => {
    env = await createOrchestratorEnv('gw-replay');
    await env.startOrchestratorWorker();
    // Counts every statement the gateway sends for a request, to show a malformed signature costs none: its
    // inbox sweeper (every 2 s) and pruner read on their own clock and are not counted.
    const background = /state = 'pending' AND next_attempt_at|DELETE FROM webhook_inbox/;
    const counting = Object.create(env.pool) as Pool;
    counting.query = ((...args: Parameters<Pool['query']>) => {
      const sql = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string }).text ?? '');
      if (!background.test(sql)) queries += 1;
      return (env.pool.query as (...a: unknown[]) => unknown)(...args);
    }) as Pool['query'];
    gateway = buildTestGateway({
      pool: counting,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
    });
    hook = await seedRegistration(env.pool, gateway.vault);
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it(
    'refuses a validly signed delivery whose timestamp is outside the tolerance, ' + 'either way, and records nothing',
    async () => {
      for (const timestamp of [
        '2001-09-09T01:46:40.000Z',
        new Date(Date.now() - 6 * 60_000).toISOString(),
        new Date(Date.now() + 6 * 60_000).toISOString(),
      ]) {
        const stale = delivery({ timestamp });
        const response = await post(stale);
        expect(response.statusCode, timestamp).toBe(400);
        expect(response.json().error).toMatchObject({ code: 'DELIVERY_STALE', fields: ['timestamp'] });
        expect(await inboxCount(stale.deliveryId)).toBe(0);
      }
      for (const timestamp of ['yesterday', '2026-01-01T00:00:00', undefined]) {
        const d = delivery({ timestamp: timestamp ?? 'x' });
        const body = JSON.parse(d.raw.toString()) as Record<string, unknown>;
        if (timestamp === undefined) delete body.timestamp;
        const raw = Buffer.from(JSON.stringify(body));
        const response = await post({
          raw,
          headers: { ...d.headers, 'x-service-signature': computeSignature(hook.secrets[0]!.secret, raw) },
        });
        expect(response.statusCode, String(timestamp)).toBe(400);
        expect(response.json().error.fields, String(timestamp)).toContain('timestamp');
      }
      const fresh = delivery({ timestamp: new Date(Date.now() - 4 * 60_000).toISOString() });
      expect((await post(fresh)).statusCode).toBe(202);
    },
  );

  it(
    'answers 409 to a known delivery id with another validly signed body, records the ' +
      'conflict, and keeps the first body',
    async () => {
      const first = delivery({ tag: 'v1' });
      expect((await post(first)).statusCode).toBe(202);
      const again = await post(first);
      expect(again.statusCode).toBe(202);
      expect(again.json().data).toMatchObject({ duplicate: true });

      const other = delivery({ deliveryId: first.deliveryId, tag: 'v2-evil' });
      const conflict = await post(other);
      expect(conflict.statusCode).toBe(409);
      expect(conflict.json().error).toMatchObject({ code: 'DELIVERY_CONFLICT', fields: ['deliveryId'] });
      const { rows } = await env.pool.query(
        `SELECT actor, action, details FROM audit_log WHERE action = 'registry.delivery_conflict' AND subject = $1`,
        [first.deliveryId],
      );
      expect(rows).toEqual([
        {
          actor: 'registry-webhook',
          action: 'registry.delivery_conflict',
          details: {
            deliveryId: first.deliveryId,
            registrationId: hook.registrationId,
            storedBodySha256: createHash('sha256').update(first.raw).digest('hex'),
            receivedBodySha256: createHash('sha256').update(other.raw).digest('hex'),
          },
        },
      ]);
      const stored = await env.pool.query(
        `SELECT body->'payload'->>'tag' AS tag FROM webhook_inbox WHERE delivery_id = $1`,
        [first.deliveryId],
      );
      expect(stored.rows).toEqual([{ tag: 'v1' }]);
    },
  );

  it('accepts a signature in upper-case hex (the contract says hexadecimal, not lower-case)', async () => {
    const d = delivery();
    const upper = `sha256=${d.headers['x-service-signature'].slice(7).toUpperCase()}`;
    const response = await post({ raw: d.raw, headers: { ...d.headers, 'x-service-signature': upper } });
    expect(response.statusCode).toBe(202);
    expect(await inboxCount(d.deliveryId)).toBe(1);
  });

  it('refuses a missing or malformed signature header without a database read', async () => {
    const unseen = await seedRegistration(env.pool, gateway.vault); // never looked up: nothing cached
    const d = delivery();
    for (const signature of [
      undefined,
      'sha256=xyz',
      `sha1=${'a'.repeat(40)}`,
      `sha256=${'a'.repeat(63)}`,
      `SHA256=${'a'.repeat(64)}`,
    ]) {
      const headers: Record<string, string> = { ...d.headers };
      if (signature === undefined) delete headers['x-service-signature'];
      else headers['x-service-signature'] = signature;
      // The gateway's own background statements (the tests before handle their deliveries after answering them)
      // may fall inside one request: a refusal that read the database would count in every try, so one of three
      // with none shows it reads nothing (the CI run met one such statement in the first try).
      const counted: number[] = [];
      for (let attempt = 0; attempt < 3 && !counted.includes(0); attempt++) {
        const before = queries;
        const response = await post({ raw: d.raw, headers }, unseen.registrationId);
        expect(response.statusCode, String(signature)).toBe(401);
        expect(response.json().error.code).toBe(signature === undefined ? 'SIGNATURE_MISSING' : 'SIGNATURE_MALFORMED');
        counted.push(queries - before);
      }
      expect(counted, String(signature)).toContain(0);
    }
  });

  it('checks a wrong signature against fresh secrets with one read and no decrypt', async () => {
    const vault = createVault(parseMasterKeys(env.secretsKeys));
    let opens = 0;
    const counting: Vault = {
      ...vault,
      open: (...args: Parameters<Vault['open']>) => ((opens += 1), vault.open(...args)),
    };
    const watched = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
      vault: counting,
    });
    try {
      const good = delivery();
      expect(
        (
          await watched.app.inject({
            method: 'POST',
            url: `/webhooks/registry/${hook.registrationId}`,
            headers: good.headers,
            payload: good.raw,
          })
        ).statusCode,
      ).toBe(202);
      expect(opens).toBe(1);
      for (let i = 0; i < 20; i += 1) {
        const bad = delivery();
        const response = await watched.app.inject({
          method: 'POST',
          url: `/webhooks/registry/${hook.registrationId}`,
          headers: { ...bad.headers, 'x-service-signature': computeSignature('not-the-secret', bad.raw) },
          payload: bad.raw,
        });
        expect(response.json().error.code).toBe('SIGNATURE_MISMATCH');
      }
      expect(opens).toBe(1);
    } finally {
      await watched.app.close();
    }
  });

  it('prunes processed deliveries past the retention in batches, and keeps recent and unprocessed ones', async () => {
    const ids = { old: [] as string[], recent: [] as string[], pending: [] as string[] };
    for (const [kind, count] of [
      ['old', 5],
      ['recent', 2],
      ['pending', 2],
    ] as const) {
      for (let i = 0; i < count; i += 1) {
        const d = delivery();
        expect((await post(d)).statusCode).toBe(202);
        ids[kind].push(d.deliveryId);
      }
    }
    await gateway.dispatcher.idle();
    // Backdate: "old" were processed 40 days ago, "pending" arrived 40 days ago and never started.
    await env.pool.query(
      `UPDATE webhook_inbox SET state = 'processed', processed_at = now() - interval ` +
        `'40 days' WHERE delivery_id = ANY($1::text[])`,
      [ids.old],
    );
    await env.pool.query(
      `UPDATE webhook_inbox SET state = 'processed', processed_at = now() - interval '1 ` +
        `day' WHERE delivery_id = ANY($1::text[])`,
      [ids.recent],
    );
    await env.pool.query(
      `UPDATE webhook_inbox SET state = 'pending', processed_at = NULL, received_at = ` +
        `now() - interval '40 days' WHERE delivery_id = ANY($1::text[])`,
      [ids.pending],
    );

    const pruner = createInboxPruner({
      pool: env.pool,
      retentionSeconds: 30 * 86_400,
      batch: 2,
      maxBatchesPerRound: 2,
    });
    expect(await pruner.pruneOnce()).toBe(4); // two full batches, then the round ends
    expect(await pruner.pruneOnce()).toBe(1);
    expect(await pruner.pruneOnce()).toBe(0);
    const left = await env.pool.query(`SELECT delivery_id FROM webhook_inbox WHERE delivery_id = ANY($1::text[])`, [
      [...ids.old, ...ids.recent, ...ids.pending],
    ]);
    expect(left.rows.map((r) => r.delivery_id as string).sort()).toEqual([...ids.recent, ...ids.pending].sort());
    // A pruned delivery replayed later is refused by its old timestamp, never processed twice.
    expect(await gateway.pruner.pruneOnce()).toBe(0);
  });
});
