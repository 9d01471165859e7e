import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { apiCall, createTenant, uniqueKey, type CallResult } from '../harness/sim-calls.js';

const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function expectErrorEnvelope(res: CallResult, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'meta']);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(res.body.meta.requestId).toMatch(/^req_/);
  expect(res.text).not.toMatch(/\bat .+\.(ts|js):\d+/);
}

describe('simulator envelope and robustness', () => {
  let sim: RunningSimulator;
  beforeEach(async () => {
    sim = await startSimulator();
  });
  afterEach(async () => {
    await sim.close();
  });

  it('wraps a success in data + meta.requestId with ISO-ms-Z timestamps and prefixed ids', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: uniqueKey('c'),
      body: { name: 'Acme', externalRef: 'cust-1' },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'meta']);
    expect(res.body.meta.requestId).toMatch(/^req_[A-Za-z0-9]+$/);
    expect(res.body.data.id).toMatch(/^sub_[A-Za-z0-9]+$/);
    expect(res.body.data.createdAt).toMatch(ISO_MS_Z);
    expect(res.body.data).toMatchObject({ name: 'Acme', externalRef: 'cust-1', status: 'active' });
  });

  it('gives every response its own request id', async () => {
    const a = await apiCall(sim, 'GET', '/subaccounts');
    const b = await apiCall(sim, 'GET', '/subaccounts');
    expect(a.body.meta.requestId).not.toBe(b.body.meta.requestId);
  });

  it('answers malformed JSON with 400 INVALID_JSON', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', { idempotencyKey: 'k', rawBody: '{"name": "x",' });
    expectErrorEnvelope(res, 400, 'INVALID_JSON');
  });

  it('answers wrong field types with 400 VALIDATION_ERROR naming the field', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: 'k',
      body: { name: 42, externalRef: 'x' },
    });
    expectErrorEnvelope(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error.message).toContain('name');
  });

  it('answers a JSON array body with 400 VALIDATION_ERROR', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', { idempotencyKey: 'k', body: [1, 2] });
    expectErrorEnvelope(res, 400, 'VALIDATION_ERROR');
  });

  it('ignores unknown request fields', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: uniqueKey('c'),
      body: { name: 'A', externalRef: 'r', futureField: { nested: true } },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.futureField).toBeUndefined();
  });

  it('answers an oversized body with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: 'k',
      body: { name: 'x'.repeat(70 * 1024), externalRef: 'r' },
    });
    expectErrorEnvelope(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers a non-JSON content type with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await apiCall(sim, 'POST', '/subaccounts/create', {
      idempotencyKey: 'k',
      rawBody: 'name=x',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectErrorEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers unknown routes and wrong methods with 404 ROUTE_NOT_FOUND', async () => {
    expectErrorEnvelope(await apiCall(sim, 'GET', '/no/such/thing'), 404, 'ROUTE_NOT_FOUND');
    expectErrorEnvelope(await apiCall(sim, 'PATCH', '/subaccounts'), 404, 'ROUTE_NOT_FOUND');
    const outside = await fetch(`${sim.url}/api/v2/subaccounts`);
    expect(outside.status).toBe(404);
    expect(((await outside.json()) as { error: { code: string } }).error.code).toBe('ROUTE_NOT_FOUND');
  });

  it('answers a badly encoded URL with a 400 envelope', async () => {
    const res = await apiCall(sim, 'GET', '/subaccounts/%zz');
    expectErrorEnvelope(res, 400, 'BAD_REQUEST');
  });

  it('answers malformed HTTP with a 400 envelope', async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(sim.port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let out = '';
      socket.on('data', (chunk) => (out += chunk.toString('utf8')));
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(body.meta.requestId).toMatch(/^req_/);
  });

  it('accepts a lifecycle POST with no body and no content type', async () => {
    const id = await createTenant(sim);
    const res = await apiCall(sim, 'POST', `/subaccounts/${id}/suspend`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.status).toBe('suspended');
  });

  it('never answers a barrage of bad requests with a 500 or a stack trace', async () => {
    const id = await createTenant(sim);
    const bad: [string, string, Parameters<typeof apiCall>[3]][] = [
      ['POST', `/subaccounts/${id}/wallet/transfers`, { idempotencyKey: 'k', rawBody: 'null' }],
      ['POST', `/subaccounts/${id}/wallet/transfers`, { idempotencyKey: 'k', rawBody: '"text"' }],
      [
        'POST',
        `/subaccounts/${id}/wallet/transfers`,
        { idempotencyKey: 'k', body: { amountMicroUsd: null, idempotencyKey: 'k' } },
      ],
      [
        'POST',
        `/subaccounts/${id}/wallet/transfers`,
        { idempotencyKey: 'k', body: { amountMicroUsd: {}, idempotencyKey: 'k' } },
      ],
      ['POST', '/subaccounts/create', { idempotencyKey: 'k', rawBody: '\u0000\u0001' }],
      ['POST', '/projects/create', { body: { name: ['a'], region: 7 } }],
      ['PUT', '/projects/proj_x/env-vars/update', { body: { variables: 'nope' } }],
      ['GET', '/subaccounts?limit=-1', {}],
      ['GET', '/subaccounts?cursor=%%%', {}],
      ['GET', '/subaccounts?limit=abc&cursor=zzz', {}],
      ['POST', '/platform/api-keys/create', { rawBody: '{"name":' }],
      ['POST', `/subaccounts/${id}/api-keys/create`, { body: { name: '' } }],
      ['GET', '/subaccounts', { headers: { Authorization: 'Basic abc' }, token: null }],
      ['GET', '/subaccounts/' + 'x'.repeat(5000), {}],
    ];
    for (const [method, path, options] of bad) {
      const res = await apiCall(sim, method, path, options);
      expect(res.status, `${method} ${path}: ${res.text}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(500);
      expect(res.body?.error?.code, `${method} ${path}`).toEqual(expect.any(String));
      expect(res.body.meta.requestId).toMatch(/^req_/);
    }
  });
});
