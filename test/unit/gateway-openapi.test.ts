import { randomBytes } from 'node:crypto';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { PUBLIC } from '../../src/gateway/http/access.js';
import { xPermission } from '../../src/gateway/http/api-docs.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createOperatorDirectory, generateOperator } from '../../src/secrets/operators.js';
import { parseOperatorList } from '../../src/domain/operator-list.js';
import { buildTestGateway, TEST_API_TOKEN } from '../harness/gateway-app.js';

/**
 * The gateway's OpenAPI document (`/openapi.json`) is generated from the routes: every registered route is in it
 * with its method, path and the permission it declares; it is valid OpenAPI 3.1 (a standard validator says so);
 * and what the routes accept and answer agrees with what it declares. The gateway is built in process over a
 * database that has no rows and a Temporal client that is never reached: enough for the document, for input
 * checks (they come before any read) and for the answers of reads that find nothing.
 */
interface Operation {
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  'x-permission'?: unknown;
  parameters?: Array<{ name: string; in: string; schema: unknown }>;
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
}

const emptyPool = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as Pool;
const unreachable = (): never => {
  throw new Error('Temporal is not reached in this test');
};
const noTemporal = {
  workflow: new Proxy({}, { get: unreachable }),
  workflowService: { getSystemInfo: async () => unreachable() },
} as unknown as Client;

/** Fastify's `/v1/tenants/:externalRef` as OpenAPI's `/v1/tenants/{externalRef}`. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');
/** A JSON pointer into the document, as a URI fragment. */
const pointer = (...parts: string[]) =>
  parts.map((part) => encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/** An admin, who may call every route: the body checks below meet no 403. */
const admin = generateOperator('openapi-admin', 'admin');
const parsedAdmin = parseOperatorList(admin.entry);
if (!parsedAdmin.ok) throw new Error(parsedAdmin.problems.join('; '));
const adminDirectory = createOperatorDirectory(parsedAdmin.operators);

/** Path parameters as a caller fills them where the document lists no values: the decision route names a close. */
const SAMPLE_PARAMS: Record<string, string> = {
  run: 'close:probe',
  decision: 'resolve-transfer',
  externalRef: 'probe',
  slot: 'default',
  key: 'probe-1',
  name: 'probe',
  version: '1',
};

interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, PropertySchema>;
  anyOf?: PropertySchema[];
  oneOf?: PropertySchema[];
  additionalProperties?: boolean;
}

/** A value of a documented property's type: the route may refuse its value, never its name. */
function sampleOf(schema: PropertySchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const type = [schema.type].flat()[0];
  if (type === 'boolean') return false;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'object') return {};
  if (type === 'array') return [];
  return 'probe';
}

/** The documented top-level fields of a body schema (each branch of an anyOf / oneOf). */
function documentedFields(schema: PropertySchema): Map<string, PropertySchema> {
  const fields = new Map(Object.entries(schema.properties ?? {}));
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])])
    for (const [name, property] of documentedFields(branch)) fields.set(name, property);
  return fields;
}

describe('the OpenAPI document', () => {
  let gateway: GatewayApp;
  let document: Document;
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  /** Validates `value` against the schema at a JSON pointer of the served document. */
  const check = (path: string, value: unknown) => {
    const valid = ajv.validate({ $ref: `openapi.json#/${path}` }, value);
    return { valid, errors: ajv.errorsText(ajv.errors) };
  };
  const bodySchemaOf = (url: string, method: string) =>
    pointer('paths', url, method, 'requestBody', 'content', 'application/json', 'schema');
  const answerSchemaOf = (url: string, method: string, status: number) =>
    pointer('paths', url, method, 'responses', String(status), 'content', 'application/json', 'schema');
  const call = (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown, headers: Record<string, string> = {}) =>
    gateway.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${TEST_API_TOKEN}`, ...headers },
      ...(body === undefined ? {} : { payload: body as object }),
    });

  beforeAll(async () => {
    gateway = buildTestGateway({
      pool: emptyPool,
      client: noTemporal,
      taskQueue: 'openapi-test',
      keys: parseMasterKeys(`k1:${randomBytes(32).toString('base64')}`),
      options: { operators: adminDirectory },
    });
    const answer = await gateway.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(answer.statusCode).toBe(200);
    document = answer.json<Document>();
    ajv.addSchema(structuredClone(document), 'openapi.json');
  });
  afterAll(async () => {
    await gateway?.app.close();
  });

  it('is valid OpenAPI 3.1 (swagger-parser)', async () => {
    expect(document.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
  });

  it('describes every registered route with its method, path, summary and declared permission', () => {
    const routes = gateway.routes.filter((route) => route.method !== 'HEAD');
    expect(routes.length).toBeGreaterThanOrEqual(60);
    const problems: string[] = [];
    for (const route of routes) {
      const name = `${route.method} ${route.url}`;
      const operation = document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      if (!operation) {
        problems.push(`${name}: not in the document`);
        continue;
      }
      if (!operation.summary) problems.push(`${name}: no summary (the route has no schema)`);
      if (JSON.stringify(operation['x-permission']) !== JSON.stringify(xPermission(route.permission)))
        problems.push(`${name}: x-permission ${JSON.stringify(operation['x-permission'])}, declared otherwise`);
      const named =
        typeof route.permission === 'object'
          ? route.permission.cases.map((c) => `${c.name} \`${c.permission}\``)
          : [route.permission === PUBLIC ? 'public' : `\`${route.permission}\``];
      if (!named.every((text) => operation.description?.includes(text)))
        problems.push(`${name}: the description does not name its permission`);
      if (route.permission === PUBLIC) {
        if (operation.security === undefined) problems.push(`${name}: public, but no security requirement stated`);
      } else {
        expect(operation.security, name).toEqual([{ bearer: [] }]);
        if (!operation.responses['401'] || !operation.responses['403'])
          problems.push(`${name}: 401 and 403 not described`);
      }
    }
    expect(problems).toEqual([]);
    // And nothing else: every operation in the document is a registered route.
    const registered = new Set(routes.map((route) => `${route.method.toLowerCase()} ${openApiPath(route.url)}`));
    const described = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method} ${path}`),
    );
    expect(described.filter((operation) => !registered.has(operation))).toEqual([]);
  });

  it('declares the bodies the routes accept: what the schema refuses, the route refuses naming the same field', async () => {
    const cases = [
      {
        url: '/v1/tenants',
        schemaUrl: '/v1/tenants',
        good: { externalRef: 'acme', name: 'Acme Inc', fundingMicroUsd: '5000000' },
        bad: { externalRef: 'acme', name: 'Acme Inc', fundingMicroUsd: '5 USD' },
        field: 'fundingMicroUsd',
      },
      {
        url: '/v1/tenants/acme/suspend',
        schemaUrl: '/v1/tenants/{externalRef}/{action}',
        good: { reason: 'unpaid invoices' },
        bad: { reason: 'unpaid invoices', color: 'red' },
        field: 'color',
      },
    ];
    for (const { url, schemaUrl, good, bad, field } of cases) {
      const schema = bodySchemaOf(schemaUrl, 'post');
      expect(check(schema, good).valid, `${url}: the good body fits the schema`).toBe(true);
      expect(check(schema, bad).valid, `${url}: the bad body does not`).toBe(false);
      const refused = await call('POST', url, bad);
      expect(refused.statusCode, url).toBe(400);
      expect(refused.json()).toMatchObject({ error: { code: 'INVALID_INPUT', fields: [field] } });
      // The good body passes the input checks (this database has no tenant: 404, or the unreachable Temporal: 500).
      expect((await call('POST', url, good)).statusCode, url).not.toBe(400);
    }

    const fits = (body: unknown) => check(bodySchemaOf('/v1/tenants/{externalRef}/funding-policy', 'put'), body).valid;
    expect(fits({ below: '1000000', to: '5000000', maxPerDay: '10000000' })).toBe(true);
    expect(fits({ below: 'lots', to: '5000000', maxPerDay: '10000000' })).toBe(false);
  });

  it('matches every handler: each documented body field is taken by its route, none refused as unknown', async () => {
    const unknownField = /is not a known field|unrecognized key/i;
    const problems: string[] = [];
    let checked = 0;
    let refusedUndocumented = 0;
    for (const [path, operations] of Object.entries(document.paths))
      for (const [method, operation] of Object.entries(operations)) {
        const schema = operation.requestBody?.content['application/json']?.schema as PropertySchema | undefined;
        if (!schema || path.startsWith('/webhooks/') || path.startsWith('/codec/')) continue;
        // A path whose body depends on a path word (`/{action}`: suspend, close, rotate-key, …) is tried with each.
        const declared = (name: string) =>
          operation.parameters?.find((p) => p.in === 'path' && p.name === name)?.schema as PropertySchema | undefined;
        let urls = [path];
        for (const [, name = ''] of path.matchAll(/\{(\w+)\}/g)) {
          const values = (declared(name)?.enum ?? [SAMPLE_PARAMS[name] ?? 'probe']).map(String);
          urls = urls.flatMap((url) => values.map((value) => url.replace(`{${name}}`, encodeURIComponent(value))));
        }
        const send = (url: string, body: object) =>
          gateway.app.inject({
            method: method.toUpperCase() as 'POST',
            url,
            headers: { authorization: `Bearer ${admin.token}`, 'idempotency-key': 'probe-1' },
            payload: body,
          });
        /** The refusal of `field` as unknown, or undefined when the route took its name. */
        const refusedAsUnknown = async (url: string, field: string, value: unknown) => {
          const answer = await send(url, { [field]: value });
          if (answer.statusCode !== 400) return undefined;
          const { message } = answer.json<{ error: { message: string } }>().error;
          return unknownField.test(message) && message.includes(`${field}:`) ? message : undefined;
        };
        for (const [field, property] of documentedFields(schema)) {
          checked += 1;
          const value = field === 'operator' ? 'openapi-admin' : sampleOf(property);
          const refusals = [];
          for (const url of urls) refusals.push(await refusedAsUnknown(url, field, value));
          if (refusals.every(Boolean))
            problems.push(`${method.toUpperCase()} ${path}: documents ${field}, refuses it (${refusals[0]})`);
        }
        if (schema.additionalProperties === false)
          for (const url of urls) {
            const answer = await send(url, { undocumentedProbe: 1 });
            if (answer.statusCode !== 400) continue;
            const { message, fields = [] } = answer.json<{ error: { message: string; fields?: string[] } }>().error;
            // Refused for another field first (a required one, a path word): says nothing about this one.
            if (!unknownField.test(message)) continue;
            refusedUndocumented += 1;
            if (!fields.includes('undocumentedProbe'))
              problems.push(`${method.toUpperCase()} ${url}: refuses an undocumented field without naming it`);
          }
      }
    expect(problems).toEqual([]);
    // Every body route was reached with its fields (the admin meets no 403; none skipped by mistake).
    expect(checked).toBeGreaterThanOrEqual(80);
    expect(refusedUndocumented).toBeGreaterThanOrEqual(20);
  });

  it('answers as declared: successes, errors and the public routes', async () => {
    const answers: Array<{ url: string; path: string; method?: 'GET' | 'POST'; body?: unknown; status: number }> = [
      { url: '/v1/whoami', path: '/v1/whoami', status: 200 },
      { url: '/v1/tenants?limit=5', path: '/v1/tenants', status: 200 },
      { url: '/v1/tenants?limit=0', path: '/v1/tenants', status: 400 },
      { url: '/v1/tenants?attention=yes', path: '/v1/tenants', status: 400 },
      { url: '/v1/tenants/nobody/wallet', path: '/v1/tenants/{externalRef}/wallet', status: 404 },
      { url: '/v1/tenants/nobody/transfers/k1', path: '/v1/tenants/{externalRef}/transfers/{key}', status: 404 },
      { url: '/healthz', path: '/healthz', status: 200 },
      { url: '/readyz', path: '/readyz', status: 503 },
      { url: '/openapi.json', path: '/openapi.json', status: 200 },
    ];
    for (const { url, path, method = 'GET', body, status } of answers) {
      const answer = await call(method, url, body);
      expect(answer.statusCode, url).toBe(status);
      const { valid, errors } = check(answerSchemaOf(path, method.toLowerCase(), status), answer.json());
      expect(valid, `${method} ${url} ${status}: ${errors}`).toBe(true);
    }
    // A declared answer is a real constraint: a wrong shape does not pass.
    expect(check(answerSchemaOf('/v1/whoami', 'get', 200), { data: { name: 'x' }, meta: {} }).valid).toBe(false);
    expect(check(answerSchemaOf('/v1/tenants', 'get', 400), { error: 'nope' }).valid).toBe(false);
  });
});
