import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliveryDispatcher, temporalDeliveryStarter } from '../../src/gateway/webhooks/delivery-dispatcher.js';
import { computeSignature } from '../../src/gateway/webhooks/signature.js';
import {
  buildTestGateway,
  seedRegistration,
  signedDelivery,
  waitFor,
  type SeededRegistration,
  type SignedDelivery,
} from '../harness/gateway-app.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

describe('gateway registry webhook receiver', () => {
  let env: OrchestratorEnv;
  let gateway: GatewayApp & { vault: ReturnType<typeof buildTestGateway>['vault'] };
  let hookA: SeededRegistration;
  let hookB: SeededRegistration;

  const post = (registrationId: string, delivery: Pick<SignedDelivery, 'raw' | 'headers'>, app = gateway.app) =>
    app.inject({
      method: 'POST',
      url: `/webhooks/registry/${registrationId}`,
      headers: delivery.headers,
      payload: delivery.raw,
    });
  const inboxRow = async (deliveryId: string) =>
    (
      await env.pool.query(
        `SELECT state, process_count, known_event, start_attempts FROM webhook_inbox WHERE delivery_id = $1`,
        [deliveryId],
      )
    ).rows[0];
  const auditFor = async (deliveryId: string) =>
    (await env.pool.query(`SELECT action FROM audit_log WHERE details->>'deliveryId' = $1`, [deliveryId])).rows.map(
      (r) => r.action as string,
    );
  const processed = (deliveryId: string) =>
    waitFor(
      () => inboxRow(deliveryId),
      (row) => row?.state === 'processed',
      30_000,
      `${deliveryId} processed`,
    );

  beforeAll(async () => {
    env = await createOrchestratorEnv('gw-webhooks');
    await env.startOrchestratorWorker();
    gateway = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
    });
    hookA = await seedRegistration(env.pool, gateway.vault);
    hookB = await seedRegistration(env.pool, gateway.vault);
  });
  afterAll(async () => {
    await gateway?.app.close();
    await env?.close();
  });

  it('records a signed delivery, answers 202 at once and processes it once through handleRegistryEvent', async () => {
    const delivery = signedDelivery(hookA.secrets[0]!.secret, { webhookId: hookA.secrets[0]!.webhookId });
    const response = await post(hookA.registrationId, delivery);
    expect(response.statusCode).toBe(202);
    expect(response.json()).toMatchObject({
      data: {
        deliveryId: delivery.deliveryId,
        duplicate: false,
        workflowId: `registry-delivery:${delivery.deliveryId}`,
      },
      meta: { requestId: expect.stringMatching(/^req_/) },
    });
    expect(await processed(delivery.deliveryId)).toMatchObject({ process_count: 1, known_event: true });
    const result = await env.client.workflow.getHandle(`registry-delivery:${delivery.deliveryId}`).result();
    expect(result).toMatchObject({ route: 'image', event: 'image.pushed', processedNow: true });
    expect(await auditFor(delivery.deliveryId)).toEqual(['registry.image.pushed']);
  });

  it('refuses 1,000 tampered bodies and signatures, and records none of them', async () => {
    const { secret, webhookId } = hookA.secrets[0]!;
    const otherSecret = hookB.secrets[0]!.secret;
    const flip = (buffer: Buffer, at: number) => {
      const copy = Buffer.from(buffer);
      copy[at] = copy[at]! ^ randomInt(1, 256);
      return copy;
    };
    const variants: Array<(d: SignedDelivery) => { raw: Buffer; signature: string | undefined; expected: string }> = [
      (d) => ({
        raw: flip(d.raw, randomInt(d.raw.length)),
        signature: d.headers['x-service-signature'],
        expected: 'SIGNATURE_MISMATCH',
      }),
      (d) => ({
        raw: d.raw.subarray(0, randomInt(d.raw.length)),
        signature: d.headers['x-service-signature'],
        expected: 'SIGNATURE_MISMATCH',
      }),
      (d) => ({ raw: d.raw, signature: `sha256=${'g'.repeat(64)}`, expected: 'SIGNATURE_MALFORMED' }),
      (d) => ({
        raw: d.raw,
        signature: `${['sha1=', 'SHA256=', 'sha512=', 'sha256:', ' sha256=', 'sha-256='][randomInt(6)]}${d.headers['x-service-signature']!.slice(7)}`,
        expected: 'SIGNATURE_MALFORMED',
      }),
      (d) => {
        const hex = d.headers['x-service-signature']!.slice(7);
        const wrong =
          randomInt(2) === 0 ? hex.slice(0, randomInt(64)) : `${hex}${randomBytes(randomInt(1, 8)).toString('hex')}`;
        return { raw: d.raw, signature: `sha256=${wrong}`, expected: 'SIGNATURE_MALFORMED' };
      },
      (d) => ({ raw: d.raw, signature: computeSignature(otherSecret, d.raw), expected: 'SIGNATURE_MISMATCH' }),
      (d) => {
        const value = JSON.parse(d.raw.toString('utf8')) as Record<string, unknown>;
        const reserialized = [
          JSON.stringify(value, null, 2),
          JSON.stringify(Object.fromEntries(Object.entries(value).reverse())),
          `${JSON.stringify(value)}\n`,
          ` ${JSON.stringify(value)}`,
        ][randomInt(4)]!;
        return {
          raw: Buffer.from(reserialized),
          signature: d.headers['x-service-signature'],
          expected: 'SIGNATURE_MISMATCH',
        };
      },
      (d) => {
        const sig = d.headers['x-service-signature']!;
        const at = 7 + randomInt(64);
        const replacement = '0123456789abcdef'.replace(sig[at]!, '')[randomInt(15)]!;
        return {
          raw: d.raw,
          signature: `${sig.slice(0, at)}${replacement}${sig.slice(at + 1)}`,
          expected: 'SIGNATURE_MISMATCH',
        };
      },
      (d) => ({ raw: d.raw, signature: undefined, expected: 'SIGNATURE_MISSING' }),
      (d) => ({ raw: d.raw, signature: computeSignature(`${secret}x`, d.raw), expected: 'SIGNATURE_MISMATCH' }),
    ];
    const before = (await env.pool.query(`SELECT count(*)::int AS n FROM webhook_inbox`)).rows[0].n;
    const codes = new Map<string, number>();
    for (let i = 0; i < 1000; i += 1) {
      const original = signedDelivery(secret, { webhookId });
      const tampered = variants[i % variants.length]!(original);
      const headers: Record<string, string> = { ...original.headers };
      if (tampered.signature === undefined) delete headers['x-service-signature'];
      else headers['x-service-signature'] = tampered.signature;
      const response = await post(hookA.registrationId, { raw: tampered.raw, headers });
      expect(response.statusCode, `variant ${i % variants.length}`).toBe(401);
      const body = response.json();
      expect(body.error.code, `variant ${i % variants.length}`).toBe(tampered.expected);
      expect(body.meta.requestId).toMatch(/^req_/);
      codes.set(body.error.code, (codes.get(body.error.code) ?? 0) + 1);
    }
    expect([...codes.values()].reduce((a, b) => a + b, 0)).toBe(1000);
    expect((await env.pool.query(`SELECT count(*)::int AS n FROM webhook_inbox`)).rows[0].n).toBe(before);
  });

  it(
    'processes a redelivered deliveryId once, whether the copies arrive one after ' + 'another or at the same time',
    async () => {
      const delivery = signedDelivery(hookA.secrets[0]!.secret, {
        webhookId: hookA.secrets[0]!.webhookId,
        event: 'image.deleted',
      });
      const sequential = [];
      for (let i = 0; i < 3; i += 1) sequential.push(await post(hookA.registrationId, delivery));
      const concurrent = await Promise.all(Array.from({ length: 20 }, () => post(hookA.registrationId, delivery)));
      const answers = [...sequential, ...concurrent];
      expect(answers.every((r) => r.statusCode === 202)).toBe(true);
      expect(answers.filter((r) => r.json().data.duplicate === false)).toHaveLength(1);
      expect(await processed(delivery.deliveryId)).toMatchObject({ process_count: 1 });
      await post(hookA.registrationId, delivery); // and once more after processing
      await gateway.dispatcher.idle();
      expect(await inboxRow(delivery.deliveryId)).toMatchObject({ state: 'processed', process_count: 1 });
      expect(await auditFor(delivery.deliveryId)).toEqual(['registry.image.deleted']);
    },
  );

  it('accepts an event name the contract does not list yet and records it as unknown', async () => {
    const delivery = signedDelivery(hookA.secrets[0]!.secret, {
      webhookId: hookA.secrets[0]!.webhookId,
      event: 'image.signed',
      payload: { image: 'registry.test/app', tag: 'v9', signer: 'ci' },
    });
    expect((await post(hookA.registrationId, delivery)).statusCode).toBe(202);
    expect(await processed(delivery.deliveryId)).toMatchObject({ known_event: false, process_count: 1 });
    expect(await auditFor(delivery.deliveryId)).toEqual(['registry.unknown_event']);
  });

  it('refuses non-JSON, oversized, mislabelled, malformed and misaddressed deliveries with clear codes', async () => {
    const { secret, webhookId } = hookA.secrets[0]!;
    const signedRaw = (text: string, headers: Record<string, string> = {}) => {
      const raw = Buffer.from(text);
      return {
        raw,
        headers: {
          'content-type': 'application/json',
          'x-service-signature': computeSignature(secret, raw),
          ...headers,
        },
      };
    };
    const cases: Array<
      [string, string, Promise<{ statusCode: number; json(): { error: { code: string; fields?: string[] } } }>]
    > = [
      ['not JSON', 'INVALID_JSON', post(hookA.registrationId, signedRaw('{"event": "image.pushed",'))],
      [
        'not UTF-8',
        'INVALID_JSON',
        post(hookA.registrationId, {
          ...signedRaw('x'),
          raw: Buffer.from([0xff, 0xfe]),
          headers: {
            ...signedRaw('x').headers,
            'x-service-signature': computeSignature(secret, Buffer.from([0xff, 0xfe])),
          },
        }),
      ],
      [
        'missing fields',
        'DELIVERY_INVALID',
        post(hookA.registrationId, signedRaw(JSON.stringify({ event: 'image.pushed' }))),
      ],
      [
        'another webhook id in the body',
        'DELIVERY_INVALID',
        post(
          hookA.registrationId,
          signedRaw(JSON.stringify({ event: 'image.pushed', deliveryId: 'dlv_x1', webhookId: 'wh_other' })),
        ),
      ],
      [
        'header and body disagree',
        'DELIVERY_INVALID',
        post(
          hookA.registrationId,
          signedRaw(JSON.stringify({ event: 'image.pushed', deliveryId: 'dlv_x2', webhookId }), {
            'x-service-delivery': 'dlv_x3',
          }),
        ),
      ],
      [
        'not labelled JSON',
        'UNSUPPORTED_MEDIA_TYPE',
        post(
          hookA.registrationId,
          signedRaw(JSON.stringify({ event: 'image.pushed', deliveryId: 'dlv_x4', webhookId }), {
            'content-type': 'text/plain',
          }),
        ),
      ],
      ['unknown receiver', 'SIGNATURE_MISMATCH', post(`whr_${'0'.repeat(24)}`, signedRaw('{}'))],
      ['malformed receiver id', 'SIGNATURE_MISMATCH', post('not-a-registration', signedRaw('{}'))],
      [
        'a NUL in the signed payload',
        'DELIVERY_INVALID',
        post(
          hookA.registrationId,
          signedRaw(
            JSON.stringify({
              event: 'image.pushed',
              deliveryId: 'dlv_x6',
              webhookId,
              payload: { image: 'registry.test/a\u0000b' },
              timestamp: new Date().toISOString(),
            }),
          ),
        ),
      ],
      [
        'too large',
        'PAYLOAD_TOO_LARGE',
        post(
          hookA.registrationId,
          signedRaw(
            JSON.stringify({
              event: 'image.pushed',
              deliveryId: 'dlv_x5',
              webhookId,
              payload: { pad: 'x'.repeat(70_000) },
            }),
          ),
        ),
      ],
    ];
    for (const [label, code, pending] of cases) {
      const response = await pending;
      expect(response.json().error.code, label).toBe(code);
      expect(response.statusCode, label).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, label).toBeLessThan(500);
    }
    const { rows } = await env.pool.query(`SELECT delivery_id FROM webhook_inbox WHERE delivery_id LIKE 'dlv_x%'`);
    expect(rows).toEqual([]);
  });

  it('answers an unknown receiver id exactly as a signature that does not match', async () => {
    const delivery = signedDelivery(hookA.secrets[0]!.secret, { webhookId: hookA.secrets[0]!.webhookId });
    const forged = {
      ...delivery,
      headers: { ...delivery.headers, 'x-service-signature': `sha256=${'ab'.repeat(32)}` },
    };
    const answers = await Promise.all([
      post(hookA.registrationId, forged),
      post(`whr_${'0'.repeat(24)}`, delivery),
      post(`whr_${'0'.repeat(24)}`, forged),
      post('not-a-registration', delivery),
    ]);
    const shapes = answers.map((answer) => {
      const body = answer.json() as { error: unknown; meta: { requestId: string } };
      return { status: answer.statusCode, error: body.error, headers: Object.keys(answer.headers).sort() };
    });
    expect(shapes[0]).toMatchObject({ status: 401, error: { code: 'SIGNATURE_MISMATCH' } });
    for (const shape of shapes.slice(1)) expect(shape).toEqual(shapes[0]);
  });

  it('refuses a signed delivery whose payload holds a NUL with a 400 naming the field, and records nothing', async () => {
    const delivery = signedDelivery(hookA.secrets[0]!.secret, {
      webhookId: hookA.secrets[0]!.webhookId,
      payload: { image: 'registry.test/app', tag: 'v1\u0000' },
    });
    const response = await post(hookA.registrationId, delivery);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ code: 'DELIVERY_INVALID', fields: ['payload.tag'] });
    const { rows } = await env.pool.query(`SELECT 1 FROM webhook_inbox WHERE delivery_id = $1`, [delivery.deliveryId]);
    expect(rows).toEqual([]);
    // A resend of the same bytes gets the same definite answer (never a 5xx that asks for another).
    expect((await post(hookA.registrationId, delivery)).statusCode).toBe(400);
  });

  it(
    'accepts the current and the previous secret during a replacement, and the ' +
      'previous one no longer after its grace period',
    async () => {
      const replacing = await seedRegistration(env.pool, gateway.vault, { generations: 2 });
      for (const { secret, webhookId } of replacing.secrets) {
        const response = await post(replacing.registrationId, signedDelivery(secret, { webhookId }));
        expect(response.statusCode).toBe(202);
      }
      const replaced = await seedRegistration(env.pool, gateway.vault, { generations: 2, retirePrevious: true });
      const strict = buildTestGateway({
        pool: env.pool,
        client: env.client,
        taskQueue: env.taskQueue,
        keys: parseMasterKeys(env.secretsKeys),
        options: { webhookSecretGraceSeconds: 0 },
      });
      try {
        const [previous, current] = replaced.secrets;
        expect(
          (
            await post(
              replaced.registrationId,
              signedDelivery(current!.secret, { webhookId: current!.webhookId }),
              strict.app,
            )
          ).statusCode,
        ).toBe(202);
        const late = await post(
          replaced.registrationId,
          signedDelivery(previous!.secret, { webhookId: previous!.webhookId }),
          strict.app,
        );
        expect(late.json().error.code).toBe('SIGNATURE_MISMATCH');
        // Within the grace period (the default gateway), a retry signed with the old secret is still taken.
        expect(
          (await post(replaced.registrationId, signedDelivery(previous!.secret, { webhookId: previous!.webhookId })))
            .statusCode,
        ).toBe(202);
      } finally {
        await strict.app.close();
      }
    },
  );

  it('keeps a delivery pending while Temporal refuses the start, and the sweeper starts it later', async () => {
    let failuresLeft = 2;
    const realStart = temporalDeliveryStarter(env.client, env.taskQueue);
    const dispatcher = createDeliveryDispatcher({
      pool: env.pool,
      start: async (delivery) => {
        if (failuresLeft > 0) {
          failuresLeft -= 1;
          throw new Error('14 UNAVAILABLE: connection refused');
        }
        await realStart(delivery);
      },
      sweepAfterSeconds: 0,
      retryAfterSeconds: 0,
    });
    const flaky = buildTestGateway({
      pool: env.pool,
      client: env.client,
      taskQueue: env.taskQueue,
      keys: parseMasterKeys(env.secretsKeys),
      dispatcher,
    });
    try {
      const delivery = signedDelivery(hookA.secrets[0]!.secret, { webhookId: hookA.secrets[0]!.webhookId });
      expect((await post(hookA.registrationId, delivery, flaky.app)).statusCode).toBe(202);
      await dispatcher.idle();
      expect(await inboxRow(delivery.deliveryId)).toMatchObject({ state: 'pending', start_attempts: 1 });
      while ((await inboxRow(delivery.deliveryId)).state === 'pending') {
        await dispatcher.sweepOnce();
        await dispatcher.idle();
      }
      expect(await processed(delivery.deliveryId)).toMatchObject({ process_count: 1, start_attempts: 2 });
    } finally {
      await flaky.app.close();
    }
  });
});
