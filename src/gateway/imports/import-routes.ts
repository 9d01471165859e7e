import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { startImports } from '../../client/imports/import-apply.js';
import { parseRefMap, type RefMapping } from '../../client/imports/import-map.js';
import { buildImportPlan, type ImportPlan } from '../../client/imports/import-plan.js';
import { closedSinceOf, importClosedTenants } from '../../client/imports/import-closed.js';
import { describeRun } from '../../client/run-status.js';
import type { Pool } from '../../client/records.js';
import { importWorkflowId } from '../../domain/ids.js';
import { PlatformError, type PlatformClient } from '../../platform/index.js';
import { actorOf } from '../http/access.js';
import { platformFailed, GatewayError, GatewayErrorCode, sendData } from '../http/errors.js';
import { badField, bodyOf, refOf, refuseUnknown } from '../http/request-input.js';
import { actorField, anyObject, doc, externalRefParam, fromZod } from '../http/api-docs.js';
import { externalRefSchema } from '../../domain/tenant-input.js';

/**
 * Importing sub-accounts made elsewhere (`tenantctl import plan|apply`), permission `imports.manage`:
 * - `POST /v1/imports/plan` `{ map? }`: what an import would do with each live sub-account no record owns
 *   (reads only, writes nothing);
 * - `POST /v1/imports/apply` `{ map?, only? }`: a fresh plan, then one importTenant run per importable row
 *   (or per `only` ref, each checked against the plan first: a bad one refuses the whole call and nothing
 *   starts); 202 with the runs started, which the caller follows with
 * - `POST /v1/imports/closed` `{ since, apply? }`: after a restore of the records, the tenants onboarded and closed
 *   since the backup, from Temporal's runs (src/client/imports/import-closed.ts); `apply` records them;
 * - `GET /v1/imports/:externalRef` (tenants.read): `{ run }`, the latest `import:<ref>` run with its result.
 * `map` is the operator's mapping file as data, `{ file, text }` (the CSV of `tenantctl import --map`; `file`
 * only names it in errors). The platform is listed with the parent key this gateway holds, paced under the
 * fleet budget; who asks is the bearer's name.
 */
export interface ImportRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  /** The platform with the parent key, paced for listing (absent: plan and apply answer 503). */
  lister: PlatformClient | undefined;
}

/** A mapping of thousands of sub-accounts is larger than the gateway's usual body limit. */
const MAP_BODY_LIMIT = 1024 * 1024;

export async function importRoutes(api: FastifyInstance, deps: ImportRoutesDeps): Promise<void> {
  const planOf = async (map: Map<string, RefMapping> | undefined): Promise<ImportPlan> => {
    if (!deps.lister)
      throw new GatewayError(
        503,
        GatewayErrorCode.PLATFORM_NOT_CONFIGURED,
        'This gateway cannot list sub-accounts: it holds no PLATFORM_BASE_URL or parent key.',
      );
    return buildImportPlan({ platform: deps.lister, db: deps.pool }, map ? { map } : {});
  };

  api.post(
    '/plan',
    { config: { permission: 'imports.manage' }, schema: planDoc, bodyLimit: MAP_BODY_LIMIT },
    async (request, reply) => {
      const { map, ...rest } = bodyOf(request.body);
      refuseUnknown(rest);
      return sendData(reply, 200, await answered(async () => planOf(mapOf(map))));
    },
  );

  api.post(
    '/apply',
    { config: { permission: 'imports.manage' }, schema: applyDoc, bodyLimit: MAP_BODY_LIMIT },
    async (request, reply) => {
      const { map, only, operator, ...rest } = bodyOf(request.body);
      refuseUnknown(rest);
      const requestedBy = actorOf(request, operator, 'operator');
      const refs = onlyOf(only);
      // Everything the caller sent is checked before the platform is asked or anything starts.
      const mapping = mapOf(map);
      const started = await answered(async () =>
        startImports({ client: deps.client, db: deps.pool }, await planOf(mapping), {
          ...(refs ? { only: refs } : {}),
          requestedBy,
          taskQueue: deps.taskQueue,
        }),
      );
      return sendData(reply, 202, started);
    },
  );

  // After a restore of the records: the tenants onboarded and closed since the backup, from Temporal's runs.
  api.post('/closed', { config: { permission: 'imports.manage' }, schema: closedDoc }, async (request, reply) => {
    const { since, apply, operator, ...rest } = bodyOf(request.body);
    refuseUnknown(rest);
    if (apply !== undefined && typeof apply !== 'boolean') throw badField('apply', 'must be true or false');
    const requestedBy = actorOf(request, operator, 'operator');
    const sinceAt = closedSinceOf(since);
    const outcome = await importClosedTenants({ client: deps.client, pool: deps.pool }, sinceAt, {
      apply: apply === true,
      requestedBy,
    });
    return sendData(reply, 200, outcome);
  });

  api.get('/:externalRef', { config: { permission: 'tenants.read' }, schema: importRunDoc }, async (request, reply) => {
    const externalRef = refOf(request.params);
    return sendData(reply, 200, { run: await describeRun(deps.client, importWorkflowId(externalRef)) });
  });
}

function mapOf(raw: unknown): Map<string, RefMapping> | undefined {
  if (raw === undefined) return undefined;
  const { file, text } = (raw ?? {}) as { file?: unknown; text?: unknown };
  if (typeof raw !== 'object' || raw === null || typeof text !== 'string')
    throw badField('map', 'must be { file, text }: the mapping CSV as text');
  if (file !== undefined && (typeof file !== 'string' || file.length > 500 || /[\p{Cc}]/u.test(file)))
    throw badField('map.file', 'must be a file name of at most 500 characters without control characters');
  return parseRefMap(text, file ?? 'map');
}

function onlyOf(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 10_000 || !raw.every((r) => typeof r === 'string'))
    throw badField('only', 'must be a non-empty list of external refs');
  return raw as string[];
}

async function answered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // The one rewording of a typed error the gateway keeps by route: an import says that nothing started.
    if (error instanceof PlatformError) throw platformFailed(error, '; nothing was started');
    throw error;
  }
}

const mapField = {
  type: 'object',
  required: ['text'],
  description: 'The mapping CSV of `tenantctl import --map` as data; `file` only names it in errors.',
  properties: { file: { type: 'string', maxLength: 500 }, text: { type: 'string' } },
};
const notListable = 'This gateway holds no platform credentials to list with (PLATFORM_NOT_CONFIGURED).';

const planDoc = doc({
  summary: 'What an import would do with each live sub-account no record owns (reads only)',
  body: { type: 'object', additionalProperties: false, properties: { map: mapField } },
  bodyOptional: true,
  answers: {
    200: { description: 'The plan.', data: anyObject },
    502: 'The platform refused or did not answer (PLATFORM_FAILED).',
    503: notListable,
  },
});

const applyDoc = doc({
  summary: 'A fresh plan, then one importTenant run per importable row (or per `only` ref)',
  description:
    'Every `only` ref is checked against the plan first: a bad one refuses the whole call and nothing starts.',
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      map: mapField,
      only: { type: 'array', minItems: 1, maxItems: 10_000, items: fromZod(externalRefSchema) },
      operator: actorField,
    },
  },
  bodyOptional: true,
  answers: {
    202: { description: 'The runs started.', data: anyObject },
    502: 'The platform refused or did not answer (PLATFORM_FAILED); nothing was started.',
    503: notListable,
  },
});

const closedDoc = doc({
  summary: 'After a restore of the records: the tenants onboarded and closed since the backup, from their runs',
  description:
    'Lists each tenant a closeTenant run closed after `since` whose onboarding completed and that no record holds, ' +
    'with the sub-account and the transfers its runs made; with `apply: true`, records each as closed and its ' +
    'transfers as made (never sent again). Idempotent.',
  body: {
    type: 'object',
    additionalProperties: false,
    required: ['since'],
    properties: {
      since: { type: 'string', description: 'The time of the backup the records were restored from (ISO 8601).' },
      apply: { type: 'boolean' },
      operator: actorField,
    },
  },
  answers: {
    200: { description: 'The tenants found, and with apply those recorded.', data: anyObject },
    400: 'A field breaks its rule (INVALID_INPUT), naming it.',
  },
});

const importRunDoc = doc({
  summary: 'The latest import run of an external ref, with its result',
  params: externalRefParam,
  answers: {
    200: {
      description: '`{ run }` (null when none).',
      data: { type: 'object', required: ['run'], properties: { run: { type: ['object', 'null'] } } },
    },
    400: 'The external ref breaks its rule (INVALID_INPUT).',
  },
});
