import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLAG_OF, registerPlanCommands, rolloutStartBody } from '../../src/cli/commands/plans.js';
import { asFlags } from '../../src/cli/commands/top-ups.js';
import type { Pool } from '../../src/db/pool.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import type { GatewayApp } from '../../src/gateway/app.js';
import { parseMasterKeys } from '../../src/secrets/master-keys.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { buildTestGateway } from '../harness/gateway-app.js';

/**
 * `tenantctl plans rollout` takes every option `POST /v1/plans/:name/rollouts` takes (issue 47): each field of the
 * route's body, as the gateway documents it and reads it, has a flag named after it (the kebab-case of its last
 * segment: `options.quietPeriod` is `--quiet-period`) with help text, sent at the field's path, and the route's
 * refusal of the field is said in that flag. Every other flag is the command's own. So a field added to the route's
 * schema without a flag, or a flag the route does not read, fails here.
 */
const ROUTE = '/v1/plans/{name}/rollouts';
/** The command's own flags: not fields of the start's body. */
const COMMAND_ONLY = ['--dry-run', '--wait', '--json'];

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
}

/** Every leaf field of a body schema by its path (`options.quietPeriod`); an object's fields, not the object. */
function fieldsOf(schema: JsonSchema, prefix = ''): string[] {
  const object = schema.properties ? schema : schema.anyOf?.find((branch) => branch.properties);
  if (!object?.properties) return [prefix];
  return Object.entries(object.properties).flatMap(([name, inner]) =>
    fieldsOf(inner, prefix ? `${prefix}.${name}` : name),
  );
}

const flagOf = (field: string) =>
  `--${field
    .split('.')
    .at(-1)!
    .replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** A body with `value` at `path`. */
function bodyWith(path: string, value: unknown): Record<string, unknown> {
  return path
    .split('.')
    .reverse()
    .reduce<unknown>((inner, segment) => ({ [segment]: inner }), value) as Record<string, unknown>;
}

const admin = generateOperator('rollout-admin', 'admin');
const emptyPool = { query: async () => ({ rows: [], rowCount: 0 }) } as unknown as Pool;
const unreachable = (): never => {
  throw new Error('Temporal is not reached in this test');
};
const noTemporal = {
  workflow: new Proxy({}, { get: unreachable }),
  workflowService: { getSystemInfo: async () => unreachable() },
} as unknown as Client;

describe('tenantctl plans rollout and POST /v1/plans/:name/rollouts', () => {
  let gateway: GatewayApp;
  let fields: string[];
  const rollout = () => {
    const program = new Command();
    registerPlanCommands(program);
    const plans = program.commands.find((command) => command.name() === 'plans')!;
    return plans.commands.find((command) => command.name() === 'rollout')!;
  };

  beforeAll(async () => {
    const operators = parseOperatorList(admin.entry);
    if (!operators.ok) throw new Error(operators.problems.join('; '));
    gateway = buildTestGateway({
      options: { operators: createOperatorDirectory(operators.operators) },
      pool: emptyPool,
      client: noTemporal,
      taskQueue: 'rollout-cli-test',
      keys: parseMasterKeys(`k1:${randomBytes(32).toString('base64')}`),
    });
    const answer = await gateway.app.inject({ method: 'GET', url: '/openapi.json' });
    const document = answer.json<{
      paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: JsonSchema }> } }>>;
    }>();
    fields = fieldsOf(document.paths[ROUTE]!['post']!.requestBody.content['application/json']!.schema);
  });
  afterAll(async () => {
    await gateway?.app.close();
  });

  it('the route documents the rollout fields, the quiet gate timings among them, and reads each one', async () => {
    expect(fields).toEqual(
      expect.arrayContaining([
        'version',
        'from',
        'concurrency',
        'pageSize',
        'reason',
        'options.quietPeriod',
        'options.pollInterval',
        'options.quietDeadline',
        'options.overlapWindow',
      ]),
    );
    // A wrong value of each documented field is refused naming that field: the route reads it (an unknown
    // field would be refused as one), before any record is read.
    for (const field of fields) {
      const answer = await gateway.app.inject({
        method: 'POST',
        url: '/v1/plans/pro/rollouts',
        headers: { authorization: `Bearer ${admin.token}` },
        payload: bodyWith(field, [true]),
      });
      expect(answer.statusCode, `${field}: ${answer.body}`).toBe(400);
      const { error } = answer.json<{ error: { fields: string[]; message: string } }>();
      expect(error.fields, field).toEqual([field]);
      expect(error.message, field).not.toContain('is not a known field');
    }
  });

  it('has a flag with help text for every field of the route, and no flag the route does not read', () => {
    const command = rollout();
    const flags = command.options.map((option) => option.long!);
    for (const field of fields) {
      const flag = flagOf(field);
      const option = command.options.find((o) => o.long === flag);
      expect(option, `${field}: no ${flag}`).toBeDefined();
      expect(option!.description.length, flag).toBeGreaterThan(10);
      expect(command.helpInformation(), flag).toContain(flag);
      // A refusal of the field is said in the flag.
      expect(FLAG_OF[field], field).toBe(flag);
      const said = asFlags(new InvalidInputError([`${field}: must be a rule`]), InvalidInputError, FLAG_OF);
      expect((said as InvalidInputError).problems, field).toEqual([`${flag}: must be a rule`]);
    }
    expect(flags.filter((flag) => !COMMAND_ONLY.includes(flag)).sort()).toEqual(fields.map(flagOf).sort());
  });

  it("sends each flag's value at its field's path in the start's body", () => {
    const command = rollout();
    const opts = Object.fromEntries(
      command.options
        .filter((option) => !COMMAND_ONLY.includes(option.long!))
        .map((option) => [option.attributeName(), 'x']),
    );
    const body = rolloutStartBody(opts);
    expect(fieldsOf({ properties: toSchema(body) }).sort()).toEqual([...fields].sort());
    expect(rolloutStartBody({ quietPeriod: '5m', concurrency: '3', version: '2' })).toEqual({
      version: 2,
      concurrency: 3,
      options: { quietPeriod: '5m' },
    });
  });
});

/** A body's shape as schema properties (objects nest), for fieldsOf. */
function toSchema(body: Record<string, unknown>): Record<string, JsonSchema> {
  return Object.fromEntries(
    Object.entries(body).map(([name, value]) => [
      name,
      typeof value === 'object' && value !== null ? { properties: toSchema(value as Record<string, unknown>) } : {},
    ]),
  );
}
