import { execFileSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SEED, startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/sim/index.js';
import {
  adminCall,
  apiCall,
  createProject,
  createTenant,
  createTenantKey,
  DEFAULT_PERSONAL_TOKEN,
} from '../harness/sim-calls.js';

interface Received {
  raw: Buffer;
  headers: IncomingHttpHeaders;
}

/** A local receiver that records raw bodies and answers with the next status of a script (then the last one). */
async function startReceiver(statuses: number[] = [200]) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ raw: Buffer.concat(chunks), headers: req.headers });
      res.statusCode = statuses[Math.min(received.length - 1, statuses.length - 1)] ?? 200;
      res.end(res.statusCode < 300 ? 'ok' : 'nope');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/registry`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The independent computation: OpenSSL's HMAC over the bytes exactly as received. */
function opensslHmac(secret: string, raw: Buffer): string {
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', secret], { input: raw }).toString('utf8');
  return `sha256=${out.trim().split(/\s+/).at(-1)}`;
}

async function until<T>(probe: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('simulator registry webhooks and outbound delivery', () => {
  let sim: RunningSimulator;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  const start = async (options: SimulatorOptions = {}) => {
    sim = await startSimulator({ ...options, choices: { deliveryBaseDelayMs: 10, ...options.choices } });
    const tenant = await createTenant(sim);
    const projectId = await createProject(sim, { token: (await createTenantKey(sim, tenant)).token });
    const human = { token: DEFAULT_PERSONAL_TOKEN, subaccount: tenant };
    const hooks = `/projects/${projectId}/registry/webhooks`;
    const createHook = (body: Record<string, unknown>) => apiCall(sim, 'POST', `${hooks}/create`, { ...human, body });
    const emit = (event: string, tag = 'v1') =>
      adminCall(sim, 'POST', '/__sim/registry/events', { projectId, event, image: 'registry.test/app', tag });
    return { projectId, human, hooks, createHook, emit };
  };
  afterEach(async () => {
    await sim.close();
    await receiver?.close();
    receiver = undefined;
  });

  it('signs the exact raw body with HMAC-SHA256 as an independent openssl computation confirms', async () => {
    receiver = await startReceiver();
    const { createHook, emit } = await start();
    const secret = 'whsec_sim_DO_NOT_USE_0001';
    const hook = await createHook({ label: 'ci', url: receiver.url, secret, events: ['image.pushed'] });
    expect(hook.status, hook.text).toBe(201);
    expect(hook.body.data.secret).toBeUndefined();
    expect(hook.text).not.toContain(secret);

    const emitted = await emit('image.pushed', 'v1.2.3');
    expect(emitted.status).toBe(202);
    await until(
      () => receiver!.received.length,
      (n) => n >= 1,
    );
    const [got] = receiver.received;
    expect(got).toBeDefined();
    expect(got!.headers['content-type']).toBe('application/json');
    expect(got!.headers['x-service-event']).toBe('image.pushed');
    expect(got!.headers['x-service-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(got!.headers['x-service-signature']).toBe(opensslHmac(secret, got!.raw));
    expect(opensslHmac('wrong-secret', got!.raw)).not.toBe(got!.headers['x-service-signature']);

    const body = JSON.parse(got!.raw.toString('utf8'));
    expect(body).toEqual({
      event: 'image.pushed',
      deliveryId: emitted.body.deliveries[0].deliveryId,
      webhookId: hook.body.data.id,
      payload: { image: 'registry.test/app', tag: 'v1.2.3' },
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect(got!.headers['x-service-delivery']).toBe(body.deliveryId);
  });

  it('sends no signature header when the webhook has no secret', async () => {
    receiver = await startReceiver();
    const { createHook, emit } = await start();
    await createHook({ label: 'plain', url: receiver.url, events: ['*'] });
    await emit('image.deleted');
    await until(
      () => receiver!.received.length,
      (n) => n >= 1,
    );
    expect(receiver.received[0]?.headers['x-service-signature']).toBeUndefined();
  });

  it('delivers only subscribed events, and every event to a * subscription', async () => {
    receiver = await startReceiver();
    const { createHook, emit } = await start();
    const pushedOnly = await createHook({ label: 'p', url: receiver.url, events: ['image.pushed'] });
    const all = await createHook({ label: 'all', url: receiver.url, events: ['*'] });
    const res = await emit('image.scan.completed');
    expect(res.body.deliveries.map((d: { webhookId: string }) => d.webhookId)).toEqual([all.body.data.id]);
    expect(pushedOnly.status).toBe(201);
    await until(
      () => receiver!.received.length,
      (n) => n >= 1,
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(receiver.received.map((r) => r.headers['x-service-event'])).toEqual(['image.scan.completed']);
  });

  it('retries a failing receiver with backoff and records the delivery outcome', async () => {
    receiver = await startReceiver([500, 503, 200]);
    const { createHook, emit, hooks, human } = await start({ choices: { deliveryAttempts: 4 } });
    const hook = await createHook({ label: 'r', url: receiver.url, events: ['*'] });
    await emit('image.pushed');
    const path = `${hooks}/${hook.body.data.id}/deliveries`;
    const list = await until(
      () => apiCall(sim, 'GET', path, human),
      (r) => r.body.data.items[0]?.status === 'succeeded',
    );
    const record = list.body.data.items[0];
    expect(record).toMatchObject({
      event: 'image.pushed',
      status: 'succeeded',
      attempts: 3,
      responseCode: 200,
      responseBody: 'ok',
      error: null,
    });
    expect(record.completedAt).toEqual(expect.any(String));
    const ids = new Set(receiver.received.map((r) => r.headers['x-service-delivery']));
    expect(ids.size).toBe(1);
    expect(new Set(receiver.received.map((r) => r.raw.toString('utf8'))).size).toBe(1);
  });

  it('marks a delivery failed after the last attempt, keeping the response code and error', async () => {
    receiver = await startReceiver([500]);
    const { createHook, emit, hooks, human } = await start({ choices: { deliveryAttempts: 2 } });
    const hook = await createHook({ label: 'f', url: receiver.url, events: ['*'] });
    await emit('image.moved');
    const list = await until(
      () => apiCall(sim, 'GET', `${hooks}/${hook.body.data.id}/deliveries`, human),
      (r) => r.body.data.items[0]?.status === 'failed',
    );
    expect(list.body.data.items[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      responseCode: 500,
      responseBody: 'nope',
    });
    expect(list.body.data.items[0].error).toContain('500');
    expect(receiver.received).toHaveLength(2);
  });

  it('records a network error when the receiver is unreachable', async () => {
    const { createHook, emit, hooks, human } = await start({ choices: { deliveryAttempts: 1 } });
    const hook = await createHook({ label: 'gone', url: 'http://127.0.0.1:9/unreachable', events: ['*'] });
    await emit('image.copied');
    const list = await until(
      () => apiCall(sim, 'GET', `${hooks}/${hook.body.data.id}/deliveries`, human),
      (r) => r.body.data.items[0]?.status === 'failed',
    );
    expect(list.body.data.items[0]).toMatchObject({ status: 'failed', responseCode: null });
    expect(list.body.data.items[0].error).toMatch(/Network error/);
  });

  it('keeps only the latest deliveryHistoryLimit records per webhook', async () => {
    receiver = await startReceiver();
    const { createHook, emit, hooks, human } = await start({ seed: { ...DEFAULT_SEED, deliveryHistoryLimit: 3 } });
    const hook = await createHook({ label: 'h', url: receiver.url, events: ['*'] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await emit('image.pushed', `t${i}`)).body.deliveries[0].deliveryId);
    const list = await apiCall(sim, 'GET', `${hooks}/${hook.body.data.id}/deliveries`, human);
    expect(list.body.data.items.map((d: { deliveryId: string }) => d.deliveryId)).toEqual(ids.slice(2));
  });

  it('lists, updates and deletes webhooks without ever returning the secret', async () => {
    receiver = await startReceiver();
    const { createHook, hooks, human } = await start();
    const hook = await createHook({
      label: 'a',
      url: 'https://hooks.example.test/x',
      secret: 's3cret-value',
      events: ['image.pushed'],
    });
    const id = hook.body.data.id as string;
    const updated = await apiCall(sim, 'PUT', `${hooks}/${id}/update`, {
      ...human,
      body: { label: 'b', events: ['image.deleted', 'image.pushed'], secret: 'n3w-secret-value' },
    });
    expect(updated.body.data).toMatchObject({ label: 'b', events: ['image.deleted', 'image.pushed'], hasSecret: true });
    const list = await apiCall(sim, 'GET', hooks, human);
    expect(list.body.data.items).toHaveLength(1);
    expect(list.text).not.toMatch(/s3cret-value|n3w-secret-value/);
    expect(JSON.stringify(sim.state())).not.toMatch(/s3cret-value|n3w-secret-value/);
    expect((await apiCall(sim, 'DELETE', `${hooks}/${id}/delete`, human)).status).toBe(200);
    const gone = await apiCall(sim, 'GET', `${hooks}/${id}/deliveries`, human);
    expect([gone.status, gone.body.error.code]).toEqual([404, 'WEBHOOK_NOT_FOUND']);
  });

  it('validates webhook input: https url, known events, label', async () => {
    const { createHook } = await start();
    for (const body of [
      { label: 'x', url: 'http://hooks.example.test/x', events: ['*'] },
      { label: 'x', url: 'not a url', events: ['*'] },
      { label: 'x', url: 'https://h.test', events: ['image.exploded'] },
      { label: 'x', url: 'https://h.test', events: [] },
      { url: 'https://h.test', events: ['*'] },
    ]) {
      const res = await createHook(body);
      expect([res.status, res.body.error.code], JSON.stringify(body)).toEqual([400, 'VALIDATION_ERROR']);
    }
  });

  it('answers a registry event for an unknown project with 404 project_not_found', async () => {
    await start();
    const res = await adminCall(sim, 'POST', '/__sim/registry/events', {
      projectId: 'proj_nope',
      event: 'image.pushed',
      image: 'a',
      tag: 'b',
    });
    expect([res.status, res.body.error.code]).toEqual([404, 'project_not_found']);
  });
});
