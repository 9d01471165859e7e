import type { Client } from '@temporalio/client';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { IdempotencyKeyReusedError, startTopUp } from '../../client/money/start-top-up.js';
import { getTransferLedger, ledgerEntryOf } from '../../client/money/transfer-ledger.js';
import type { Pool } from '../../client/records.js';
import { requireTenant } from '../../client/tenant-records.js';
import { TenantNotFoundError } from '../../domain/record-errors.js';
import { describeRun } from '../../client/run-status.js';
import { topUpWorkflowId } from '../../domain/ids.js';
import {
  claimRestoredTopUp,
  findRecordedTopUp,
  OPEN_TRANSFER_STATES,
  precheckTopUp,
  TopUpNotAllowedError,
} from '../../client/money/top-up-precheck.js';
import { findTransferIntentOf, type TransferIntentRow } from '../../client/money/transfer-ledger.js';
import { InvalidInputError, parseInput } from '../../domain/tenant-input.js';
import { TenantRefusedError } from '../../domain/tenant-rules.js';
import { idempotencyKeySchema, topUpBodySchema } from '../../domain/top-up-input.js';
import { topUpPurpose } from '../../domain/top-up-ids.js';
import { actorOf } from '../http/access.js';
import {
  GatewayError,
  GatewayErrorCode,
  invalidInput,
  tenantNotFound,
  tenantRefused,
  sendData,
} from '../http/errors.js';
import { anyObject, doc, externalRefParam } from '../http/api-docs.js';
import { accepted, refOf } from '../http/request-input.js';

/**
 * Top-ups and the ledger for signup backends, Stripe-style: `POST /v1/tenants/:ref/transfers` with an
 * `Idempotency-Key` header. The key's first request starts `fundTenant` (202); while it runs the
 * same key answers 409 with Retry-After; once settled the same key and body replay the stored
 * transfer (200, from Postgres, kept for good); the same key with another body is 422 naming the key.
 * Every check that needs no platform call happens before anything starts.
 */
export interface TransferRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  publicUrl: string | undefined;
  /** TRANSFER_MAX_MICRO_USD (absent: its default). */
  maxTransferMicroUsd?: string | undefined;
}

export async function transferRoutes(api: FastifyInstance, deps: TransferRoutesDeps): Promise<void> {
  const transferUrl = (externalRef: string, key: string) =>
    `${deps.publicUrl ?? ''}/v1/tenants/${encodeURIComponent(externalRef)}/transfers/${encodeURIComponent(key)}`;

  api.post(
    '/tenants/:externalRef/transfers',
    { config: { permission: 'funds.transfer' }, schema: topUpDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const { key, body } = validatedRequest(request.headers['idempotency-key'], request.body);
      const input = {
        externalRef,
        idempotencyKey: key,
        amountMicroUsd: body.amountMicroUsd,
        requestedBy: actorOf(request, body.requestedBy, 'requestedBy'),
        ...(body.reason ? { reason: body.reason } : {}),
      };
      const location = transferUrl(externalRef, key);
      try {
        const limit = { maxTransferMicroUsd: deps.maxTransferMicroUsd };
        const witness = { client: deps.client, actor: input.requestedBy };
        const recorded = await precheckTopUp(deps.pool, input, { ...limit, witness });
        if (recorded) return answerRecorded(reply, recorded, key);
        const handle = await startTopUp(deps.client, input, { taskQueue: deps.taskQueue, ...limit });
        if (handle.started)
          return accepted(reply, location, {
            externalRef,
            idempotencyKey: key,
            workflowId: handle.workflowId,
            started: true,
            statusUrl: location,
          });
        // Joined a run of this key: it wrote its intent since we looked, or is about to; or it ended before a restore
        // of the records, and drift recorded its transfer again from the wallet.
        const now = (await findRecordedTopUp(deps.pool, input)) ?? (await claimRestoredTopUp(deps.pool, input));
        if (now) return answerRecorded(reply, now, key);
        throw inProgress(key, 1);
      } catch (error) {
        if (error instanceof TenantNotFoundError) throw tenantNotFound();
        if (error instanceof IdempotencyKeyReusedError) throw keyReused(key);
        if (error instanceof TenantRefusedError) throw tenantRefused(error);
        if (error instanceof TopUpNotAllowedError)
          throw new GatewayError(409, GatewayErrorCode[error.code], `${error.message}.`);
        if (error instanceof InvalidInputError) throw invalidInput(error);
        throw error;
      }
    },
  );

  api.get(
    '/tenants/:externalRef/transfers',
    { config: { permission: 'tenants.read' }, schema: ledgerDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      return sendData(reply, 200, await getTransferLedger(deps.pool, externalRef));
    },
  );

  // Where the top-up run of a key stands (its result once it ended): what `tenantctl fund --wait` polls.
  api.get(
    '/tenants/:externalRef/transfers/:key/run',
    { config: { permission: 'tenants.read' }, schema: runDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const key = pathKeyOf((request.params as { key?: unknown }).key);
      await requireTenant(deps.pool, externalRef);
      const run = await describeRun(deps.client, topUpWorkflowId(externalRef, key));
      return sendData(reply, 200, { externalRef, idempotencyKey: key, run });
    },
  );

  api.get(
    '/tenants/:externalRef/transfers/:key',
    { config: { permission: 'tenants.read' }, schema: transferDoc },
    async (request, reply) => {
      const externalRef = refOf(request.params);
      const key = pathKeyOf((request.params as { key?: unknown }).key);
      const row = await findTransferIntentOf(deps.pool, externalRef, topUpPurpose(key));
      if (!row)
        throw new GatewayError(
          404,
          GatewayErrorCode.TRANSFER_NOT_FOUND,
          'No top-up of this tenant under this idempotency key.',
        );
      return sendData(reply, 200, ledgerEntryOf(row));
    },
  );
}

/** The header and the body checked together: every problem named at once, nothing started. */
function validatedRequest(header: string | string[] | undefined, rawBody: unknown) {
  const problems: string[] = [];
  let key = '';
  try {
    key = keyOf(Array.isArray(header) ? header.join(',') : header, 'Idempotency-Key');
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    problems.push(...error.problems);
  }
  let body: ReturnType<typeof topUpBodySchema.parse> | undefined;
  try {
    body = parseInput(topUpBodySchema, rawBody ?? {});
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    problems.push(...error.problems);
  }
  if (problems.length > 0 || !body) throw invalidInput(new InvalidInputError(problems));
  return { key, body };
}

/** The key in the path: a malformed one is a 400 naming it, before any read (it was an unanswered 500). */
function pathKeyOf(value: unknown): string {
  return keyOf(value, 'key');
}

function keyOf(value: unknown, field: string): string {
  const parsed = idempotencyKeySchema.safeParse(value);
  if (!parsed.success) throw new InvalidInputError([`${field}: ${parsed.error.issues[0]?.message ?? 'invalid'}`]);
  return parsed.data;
}

function answerRecorded(reply: FastifyReply, row: TransferIntentRow, key: string) {
  if (OPEN_TRANSFER_STATES.has(row.state)) throw inProgress(key, row.state === 'pending' ? 1 : 30);
  return sendData(reply, 200, { replayed: true, transfer: ledgerEntryOf(row) });
}

function keyReused(key: string): GatewayError {
  return new GatewayError(
    422,
    GatewayErrorCode.IDEMPOTENCY_KEY_REUSED,
    `Idempotency-Key ${key} was already used for this tenant with another amount or reason.`,
    { fields: ['Idempotency-Key'] },
  );
}

function inProgress(key: string, retryAfterSeconds: number): GatewayError {
  return new GatewayError(
    409,
    GatewayErrorCode.TRANSFER_IN_PROGRESS,
    `The top-up under Idempotency-Key ${key} is still running; retry later for its result.`,
    {
      headers: { 'Retry-After': String(retryAfterSeconds) },
    },
  );
}

const keyParams = { ...externalRefParam, key: idempotencyKeySchema };

const topUpDoc = doc({
  summary: 'Top up the tenant, exactly once per Idempotency-Key',
  description:
    'Starts fundTenant (id fund:<externalRef>:<key>). The same key and body replay the stored transfer once it ' +
    'settled (kept for good); while it runs, 409 with Retry-After; the same key with another amount or reason, 422. ' +
    '`requestedBy` is taken from the bearer token (it may only repeat its name).',
  params: externalRefParam,
  headers: { 'Idempotency-Key': idempotencyKeySchema },
  body: topUpBodySchema,
  answers: {
    202: { description: 'Started; Location is the transfer of this key.', data: anyObject },
    200: { description: 'A replay: the stored transfer of this key (`replayed: true`).', data: anyObject },
    404: 'No such tenant in our records (TENANT_NOT_FOUND).',
    409:
      'The key is still running (TRANSFER_IN_PROGRESS, with Retry-After), or the tenant is closing or closed ' +
      '(TENANT_CLOSED), not onboarded (TENANT_NOT_PROVISIONED), or past a cap.',
    422: 'The key was used with another amount or reason (IDEMPOTENCY_KEY_REUSED).',
  },
});

const ledgerDoc = doc({
  summary: "The tenant's ledger: every transfer with purpose, state, keys, who asked and why",
  params: externalRefParam,
  answers: { 200: { description: 'The ledger.', data: anyObject }, 404: 'Unknown tenant (TENANT_NOT_FOUND).' },
});

const runDoc = doc({
  summary: 'Where the top-up run of a key stands: its status, and its result or failure once it ended',
  params: keyParams,
  answers: {
    200: {
      description: 'The run (null before it started).',
      data: {
        type: 'object',
        required: ['externalRef', 'idempotencyKey', 'run'],
        properties: {
          externalRef: { type: 'string' },
          idempotencyKey: { type: 'string' },
          run: { type: ['object', 'null'] },
        },
      },
    },
    400: 'The external ref or key breaks its rule (INVALID_INPUT).',
    404: 'Unknown tenant (TENANT_NOT_FOUND).',
  },
});

const transferDoc = doc({
  summary: 'One top-up by its Idempotency-Key',
  params: keyParams,
  answers: {
    200: { description: 'The transfer.', data: anyObject },
    400: 'The external ref or key breaks its rule (INVALID_INPUT).',
    404: 'No top-up under this key (TRANSFER_NOT_FOUND).',
  },
});
