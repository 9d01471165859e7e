import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ExternalRefConflictError, startOnboarding } from '../client/start-onboarding.js';
import type { Pool } from '../db/pool.js';
import { findTenant, TenantNotFoundError } from '../db/tenants-store.js';
import { externalRefSchema, InvalidInputError, slotSchema } from '../domain/tenant-input.js';
import { tenantExternalRefKey } from '../search-attributes.js';
import { getTenantStatus } from '../tenants/tenant-status.js';
import { requireBearer, type TokenSet } from './auth.js';
import { GatewayError, GatewayErrorCode, sendData } from './errors.js';

/**
 * The trigger and status API for signup backends (any language): bearer-token auth on every route,
 * the platform's envelope on every answer. Customer-supplied external refs are mapped through our
 * ownership records before anything else happens: an unknown one is a 404 with no workflow started.
 */
export interface TenantRoutesDeps {
  pool: Pool;
  client: Client;
  taskQueue: string;
  tokens: TokenSet;
  publicUrl: string | undefined;
}

/** Lifecycle actions start workflows by NAME: they live in the worker, this process only starts them. */
export const LIFECYCLE_ACTIONS = {
  rotate: { workflowType: 'rotateTenantKey', workflowId: (ref: string, slot: string) => `rotate:${ref}:${slot}` },
  suspend: { workflowType: 'suspendTenant', workflowId: (ref: string) => `suspend:${ref}` },
  resume: { workflowType: 'resumeTenant', workflowId: (ref: string) => `resume:${ref}` },
  close: { workflowType: 'closeTenant', workflowId: (ref: string) => `close:${ref}` },
} as const;
export type LifecycleAction = keyof typeof LIFECYCLE_ACTIONS;

export function registerTenantRoutes(app: FastifyInstance, deps: TenantRoutesDeps): void {
  const statusUrl = (externalRef: string) => `${deps.publicUrl ?? ''}/v1/tenants/${encodeURIComponent(externalRef)}`;

  void app.register(async (api) => {
    api.addHook('preHandler', requireBearer(deps.tokens));

    api.post('/v1/tenants', async (request, reply) => {
      try {
        const handle = await startOnboarding(deps.client, request.body, { taskQueue: deps.taskQueue });
        const externalRef = (request.body as { externalRef: string }).externalRef;
        return accepted(reply, statusUrl(externalRef), { externalRef, workflowId: handle.workflowId, started: handle.started, statusUrl: statusUrl(externalRef) });
      } catch (error) {
        if (error instanceof InvalidInputError) throw invalidInput(error);
        if (error instanceof ExternalRefConflictError) {
          throw new GatewayError(409, GatewayErrorCode.EXTERNAL_REF_CONFLICT, 'This external ref is already being onboarded under another name.');
        }
        throw error;
      }
    });

    api.get('/v1/tenants/:externalRef', async (request, reply) => {
      const externalRef = refOf(request.params);
      try {
        return sendData(reply, 200, await getTenantStatus({ pool: deps.pool, client: deps.client }, externalRef));
      } catch (error) {
        if (error instanceof TenantNotFoundError) throw tenantNotFound();
        throw error;
      }
    });

    api.post('/v1/tenants/:externalRef/:action', async (request, reply) => {
      const { action } = request.params as { action: string };
      if (!Object.hasOwn(LIFECYCLE_ACTIONS, action)) {
        throw new GatewayError(404, GatewayErrorCode.ROUTE_NOT_FOUND, `No such action; use one of ${Object.keys(LIFECYCLE_ACTIONS).join(', ')}.`);
      }
      const externalRef = refOf(request.params);
      const slot = action === 'rotate' ? slotOf(request.body) : undefined;
      const tenant = await findTenant(deps.pool, externalRef);
      if (!tenant) throw tenantNotFound();
      if (!tenant.subaccountId) {
        throw new GatewayError(409, GatewayErrorCode.TENANT_NOT_PROVISIONED, 'The tenant has no sub-account yet: wait for onboarding to finish.');
      }
      const spec = LIFECYCLE_ACTIONS[action as LifecycleAction];
      const workflowId = slot === undefined ? (spec.workflowId as (ref: string) => string)(externalRef) : spec.workflowId(externalRef, slot);
      const input: Record<string, string> = slot === undefined ? { externalRef } : { externalRef, slot };
      const runId = await startLifecycle(deps, spec.workflowType, workflowId, input);
      return accepted(reply, statusUrl(externalRef), { externalRef, action, workflowId, runId, statusUrl: statusUrl(externalRef) });
    });
  });
}

/**
 * One run per business key: a second call while one runs joins it; after it has finished, the
 * action may be asked for again (suspend after a resume, the next rotation).
 */
async function startLifecycle(deps: TenantRoutesDeps, workflowType: string, workflowId: string, input: Record<string, string>): Promise<string | null> {
  try {
    const handle = await deps.client.workflow.start(workflowType, {
      taskQueue: deps.taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: new TypedSearchAttributes([{ key: tenantExternalRefKey, value: input.externalRef! }]),
    });
    return handle.firstExecutionRunId;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return null;
    throw error;
  }
}

function accepted(reply: FastifyReply, location: string, data: Record<string, unknown>) {
  void reply.header('Location', location);
  return sendData(reply, 202, data);
}

function refOf(params: unknown): string {
  const parsed = externalRefSchema.safeParse((params as { externalRef?: unknown }).externalRef);
  if (!parsed.success) throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, `externalRef: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { fields: ['externalRef'] });
  return parsed.data;
}

function slotOf(body: unknown): string {
  if (body === undefined || body === null) return 'default';
  const slot = (body as { slot?: unknown }).slot;
  if (typeof body !== 'object' || slot === undefined) return 'default';
  const parsed = slotSchema.safeParse(slot);
  if (!parsed.success) throw new GatewayError(400, GatewayErrorCode.INVALID_INPUT, `slot: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { fields: ['slot'] });
  return parsed.data;
}

function tenantNotFound(): GatewayError {
  return new GatewayError(404, GatewayErrorCode.TENANT_NOT_FOUND, 'No tenant with this external ref.');
}

function invalidInput(error: InvalidInputError): GatewayError {
  const fields = [...new Set(error.problems.map((problem) => problem.split(':')[0]!))];
  return new GatewayError(400, GatewayErrorCode.INVALID_INPUT, error.message, { fields });
}
