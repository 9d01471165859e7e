/**
 * Helpers for gateway tests and the webhooks benchmark: signed deliveries, registrations seeded with
 * a known secret (no platform involved), and a gateway listening on a real loopback socket.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Pool } from '../../src/db/pool.js';
import { withTransaction } from '../../src/db/pool.js';
import {
  insertPendingSecret,
  insertRegistration,
  promoteSecret,
  retireSecrets,
  setRegistrationStatus,
} from '../../src/db/webhook-registrations-store.js';
import type { Logger } from '../../src/infra/log.js';
import { parseMasterKeys, type MasterKeyRing } from '../../src/secrets/master-keys.js';
import { createEncryptionCodec } from '../../src/secrets/payload-codec.js';
import { createVault, type Vault } from '../../src/secrets/vault.js';
import { buildGatewayApp, type GatewayApp } from '../../src/gateway/app.js';
import { loadConfig } from '../../src/config/index.js';
import { gatewayOptionsOf } from '../../src/main/wiring/gateway-options.js';
import type { DeliveryDispatcher } from '../../src/gateway/webhooks/delivery-dispatcher.js';
import type { GatewayOptions } from '../../src/gateway/options.js';
import { computeSignature } from '../../src/gateway/webhooks/signature.js';
import { webhookSecretAad } from '../../src/secrets/webhook-secrets.js';
import { testAllowHosts } from './outbound.js';

export const TEST_API_TOKEN = 'gw-test-api-token-0123456789abcdef0123';
export const TEST_CODEC_TOKEN = 'gw-test-codec-token-0123456789abcdef012';

export interface SignedDelivery {
  raw: Buffer;
  deliveryId: string;
  headers: Record<string, string>;
}

let sequence = 0;
export function newDeliveryId(label = 'dlv'): string {
  sequence += 1;
  return `${label}_${process.pid}_${sequence}_${randomBytes(4).toString('hex')}`;
}

/** A delivery exactly as the platform sends it: the body serialized once and signed over those bytes. */
export function signedDelivery(
  secret: string,
  fields: { webhookId: string; event?: string; deliveryId?: string; payload?: Record<string, unknown> },
): SignedDelivery {
  const deliveryId = fields.deliveryId ?? newDeliveryId();
  const event = fields.event ?? 'image.pushed';
  const raw = Buffer.from(
    JSON.stringify({
      event,
      deliveryId,
      webhookId: fields.webhookId,
      payload: fields.payload ?? { image: 'registry.test/app', tag: 'v1' },
      timestamp: new Date().toISOString(),
    }),
    'utf8',
  );
  return {
    raw,
    deliveryId,
    headers: {
      'content-type': 'application/json',
      'x-service-event': event,
      'x-service-delivery': deliveryId,
      'x-service-signature': computeSignature(secret, raw),
    },
  };
}

export interface SeededRegistration {
  registrationId: string;
  secrets: Array<{ secret: string; webhookId: string }>;
}

/**
 * A registration with `generations` secrets: the last is current, earlier ones previous (a replacement
 * under way). `retirePrevious` starts the previous secrets' grace period (the old webhook was deleted).
 */
export async function seedRegistration(
  pool: Pool,
  vault: Vault,
  input: { externalRef?: string | null; generations?: number; retirePrevious?: boolean } = {},
): Promise<SeededRegistration> {
  const registrationId = `whr_${randomBytes(12).toString('hex')}`;
  const secrets: SeededRegistration['secrets'] = [];
  await withTransaction(pool, async (tx) => {
    await insertRegistration(tx, {
      id: registrationId,
      externalRef: input.externalRef ?? null,
      projectId: 'proj_test',
      label: 'test',
      url: `http://127.0.0.1/webhooks/registry/${registrationId}`,
      events: ['*'],
    });
    for (let generation = 1; generation <= (input.generations ?? 1); generation += 1) {
      const secret = randomBytes(32).toString('base64url');
      const webhookId = `wh_${randomBytes(8).toString('hex')}`;
      await insertPendingSecret(tx, {
        registrationId,
        generation,
        sealed: vault.seal(secret, webhookSecretAad({ registrationId, generation })),
      });
      await promoteSecret(tx, registrationId, generation, webhookId);
      secrets.push({ secret, webhookId });
    }
    if (input.retirePrevious) await retireSecrets(tx, registrationId, ['previous']);
    await setRegistrationStatus(tx, registrationId, 'active');
  });
  return { registrationId, secrets };
}

export interface TestGatewayInput {
  pool: Pool;
  client: Client;
  taskQueue: string;
  keys: MasterKeyRing;
  options?: Partial<GatewayOptions>;
  dispatcher?: DeliveryDispatcher;
  logger?: Logger;
  /** Default: a vault over `keys`. */
  vault?: Vault;
}

export function buildTestGateway(input: TestGatewayInput): GatewayApp & { vault: Vault } {
  const vault = input.vault ?? createVault(input.keys);
  const options: GatewayOptions = {
    // The product's defaults, from the one place that turns settings into options; the test's own below.
    ...gatewayOptionsOf(loadConfig({}), input.taskQueue),
    taskQueue: input.taskQueue,
    apiTokens: [TEST_API_TOKEN],
    codecTokens: [TEST_CODEC_TOKEN],
    codecCorsOrigins: ['http://localhost:8233'],
    publicUrl: undefined,
    webhookBodyLimitBytes: 64 * 1024,
    webhookSecretGraceSeconds: 3_600,
    webhookToleranceSeconds: 300,
    webhookInboxRetentionSeconds: 30 * 86_400,
    deployers: { defaultDeployer: 'notify', notifyConfigured: true },
    outboundAllowHosts: testAllowHosts,
    ...input.options,
  };
  const built = buildGatewayApp({
    pool: input.pool,
    client: input.client,
    vault,
    codec: createEncryptionCodec(input.keys),
    options,
    ...(input.dispatcher ? { dispatcher: input.dispatcher } : {}),
    ...(input.logger ? { logger: input.logger } : {}),
  });
  return { ...built, vault };
}

/** Listens on a free loopback port; returns its base URL. */
/** A test gateway over an orchestrator env's database, client, task queue and master keys, listening on loopback. */
export async function listenGatewayOver(
  env: { pool: Pool; client: Client; taskQueue: string; secretsKeys: string },
  options: Partial<GatewayOptions> = {},
): Promise<{ gateway: GatewayApp; url: string }> {
  const gateway = buildTestGateway({
    pool: env.pool,
    client: env.client,
    taskQueue: env.taskQueue,
    keys: parseMasterKeys(env.secretsKeys),
    options,
  });
  return { gateway, url: await listenOnLoopback(gateway) };
}

export async function listenOnLoopback(gateway: GatewayApp): Promise<string> {
  await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const address = gateway.app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

export async function waitFor<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
