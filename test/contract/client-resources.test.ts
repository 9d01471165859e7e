import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createPlatformClient,
  PlatformNotFoundError,
  type PlatformClient,
  type ResourceAuth,
} from '../../src/platform/index.js';
import {
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { failure } from '../harness/failures.js';

let sim: RunningSimulator;
let client: PlatformClient;
let subaccountId: string;

beforeEach(async () => {
  sim = await startSimulator();
  client = createPlatformClient({
    baseUrl: sim.apiBase,
    platformKey: DEFAULT_PLATFORM_KEY,
    personalToken: DEFAULT_PERSONAL_TOKEN,
  });
  subaccountId = (await client.createSubaccount({ name: 'Acme', externalRef: 'acme', idempotencyKey: 'onboard:acme' }))
    .subaccount.id;
});
afterEach(async () => {
  await sim.close();
});

describe('client against the simulator: projects', () => {
  it('keeps each auth context to its own projects', async () => {
    const { token } = await client.createTenantKey({ subaccountId, name: 'ci' });
    const tenantAuth: ResourceAuth = { kind: 'tenant-key', token };
    const viaKey = await client.createProject({ auth: tenantAuth, name: 'web', region: 'eu-central' });
    expect(viaKey.project).toMatchObject({ name: 'web', region: 'eu-central' });
    expect(viaKey.project.id).toMatch(/^proj_/);
    expect(viaKey.project.createdAt).toMatch(/Z$/);
    const viaPlatform = await client.listProjects({ auth: { kind: 'platform', subaccountId } });
    expect(viaPlatform.projects.map((p) => p.id)).toEqual([viaKey.project.id]);
    const parentOwn = await client.listProjects({ auth: { kind: 'personal' } });
    expect(parentOwn.projects).toEqual([]);
    const read = await client.getProject({ auth: { kind: 'personal' }, projectId: viaKey.project.id });
    expect(read.project.id).toBe(viaKey.project.id);
  });

  it('deletes a project; a second delete or lookup is project_not_found', async () => {
    const auth: ResourceAuth = { kind: 'platform', subaccountId };
    const { project } = await client.createProject({ auth, name: 'tmp', region: 'eu-central' });
    const deleted = await client.deleteProject({ auth, projectId: project.id });
    expect(deleted.requestId).toMatch(/^req_/);
    const again = await failure(client.deleteProject({ auth, projectId: project.id }));
    expect(again).toBeInstanceOf(PlatformNotFoundError);
    expect(again.platformCode).toBe('project_not_found');
    expect((await client.listProjects({ auth })).projects).toEqual([]);
  });

  it('replaces env vars wholesale: what is not sent is gone', async () => {
    const auth: ResourceAuth = { kind: 'platform', subaccountId };
    const { project } = await client.createProject({ auth, name: 'web', region: 'eu-central' });
    expect((await client.getEnvVars({ auth, projectId: project.id })).vars).toEqual({});
    await client.putEnvVars({ auth, projectId: project.id, vars: { A: '1', B: '2' } });
    const read = await client.getEnvVars({ auth, projectId: project.id });
    const next: Record<string, string> = { ...read.vars, B: 'two', C: '3' };
    delete next.A;
    const put = await client.putEnvVars({ auth, projectId: project.id, vars: next });
    expect(put.vars).toEqual({ B: 'two', C: '3' });
    expect((await client.getEnvVars({ auth, projectId: project.id })).vars).toEqual({ B: 'two', C: '3' });
    await client.putEnvVars({ auth, projectId: project.id, vars: {} });
    expect((await client.getEnvVars({ auth, projectId: project.id })).vars).toEqual({});
  });
});

describe('client against the simulator: registry webhooks', () => {
  let receiver: Server;
  let receiverUrl: string;
  const received: string[] = [];

  beforeEach(async () => {
    receiver = createServer((req, res) => {
      received.push(String(req.headers['x-service-event']));
      res.writeHead(204).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterEach(async () => {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('creates, lists, updates, inspects deliveries of and deletes a webhook with a personal token', async () => {
    const auth: ResourceAuth = { kind: 'personal' };
    const { project } = await client.createProject({
      auth: { kind: 'platform', subaccountId },
      name: 'web',
      region: 'eu-central',
    });
    const created = await client.createWebhook({
      auth,
      projectId: project.id,
      label: 'ci',
      url: receiverUrl,
      secret: 'whsec_test_1',
      events: ['image.pushed'],
    });
    expect(created.webhook).toMatchObject({ label: 'ci', url: receiverUrl, events: ['image.pushed'] });
    expect(JSON.stringify(created)).not.toContain('whsec_test_1');
    expect((await client.listWebhooks({ auth, projectId: project.id })).webhooks.map((w) => w.id)).toEqual([
      created.webhook.id,
    ]);
    const updated = await client.updateWebhook({
      auth,
      projectId: project.id,
      webhookId: created.webhook.id,
      events: ['*'],
    });
    expect(updated.webhook.events).toEqual(['*']);

    const emitted = await fetch(`${sim.url}/__sim/registry/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ projectId: project.id, event: 'image.pushed', image: 'web', tag: 'v1' }),
    });
    expect(emitted.status).toBe(202);
    let deliveries = (
      await client.listWebhookDeliveries({ auth, projectId: project.id, webhookId: created.webhook.id })
    ).deliveries;
    for (let i = 0; i < 50 && deliveries[0]?.completedAt === undefined; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      deliveries = (await client.listWebhookDeliveries({ auth, projectId: project.id, webhookId: created.webhook.id }))
        .deliveries;
    }
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ event: 'image.pushed', responseCode: 204 });
    expect(deliveries[0]?.deliveryId).toMatch(/.+/);
    expect(received).toContain('image.pushed');

    await client.deleteWebhook({ auth, projectId: project.id, webhookId: created.webhook.id });
    expect((await client.listWebhooks({ auth, projectId: project.id })).webhooks).toEqual([]);
  });
});
