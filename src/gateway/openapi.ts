import { z } from 'zod';
import { lifecycleBodySchema, rotateBodySchema } from './action-input.js';
import { fundingPolicySchema } from '../domain/funding-policy-input.js';
import { topUpBodySchema } from '../domain/top-up-input.js';

/**
 * The OpenAPI 3.1 description served at `/openapi.json`, written by hand: the routes are few and
 * stable, and a generator would mean a new dependency. The action bodies are generated from the
 * schemas that validate them (zod's JSON Schema), so the document cannot drift from the check.
 * Tests check that every route is described.
 */
const bodySchema = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return rest;
};
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });
const errorResponse = (description: string) => ({ description, content: json(ref('ErrorEnvelope')) });
const externalRefParam = {
  name: 'externalRef',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' },
};
const dataEnvelope = (schema: unknown) => ({
  type: 'object',
  required: ['data', 'meta'],
  properties: { data: schema, meta: ref('Meta') },
});
const authErrors = { '401': errorResponse('Missing or unknown bearer token (UNAUTHORIZED).') };

const lifecycle = (action: string, workflowType: string, body?: unknown) => ({
  post: {
    summary: `Start ${workflowType} for a tenant of ours`,
    description:
      `Starts (or joins) the ${workflowType} workflow. The external ref is mapped ` +
      `through our ownership records first: an unknown one is 404 and nothing starts.`,
    operationId: `${action}Tenant`,
    security: [{ bearer: [] }],
    parameters: [externalRefParam],
    ...(body ? { requestBody: { required: false, content: json(body) } } : {}),
    responses: {
      '202': {
        description: 'Started or joined: the input was valid. Poll the status URL until this run is no longer RUNNING.',
        content: json(dataEnvelope(ref('LifecycleAccepted'))),
      },
      '400': errorResponse(
        'Invalid external ref or body; `fields` names them (INVALID_INPUT, INVALID_JSON). Nothing was started.',
      ),
      ...authErrors,
      '404': errorResponse('No such tenant in our records (TENANT_NOT_FOUND).'),
      '409': errorResponse(
        'The tenant has no sub-account yet (TENANT_NOT_PROVISIONED), or, for rotate, is ' +
          'closing or closed (TENANT_CLOSED).',
      ),
      '415': errorResponse('The body is not JSON (UNSUPPORTED_MEDIA_TYPE).'),
      ...(action === 'rotate'
        ? {
            '422': errorResponse(
              'The deployer is not configured on this gateway (DEPLOYER_NOT_CONFIGURED). Nothing was started.',
            ),
          }
        : {}),
    },
  },
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Tenant provisioning gateway',
    version: '1.0.0',
    description:
      'Trigger and status API for signup backends, the registry webhook receiver, and ' +
      'the Temporal payload codec endpoint. Every error is `{ error: { code, message, ' +
      'fields? }, meta: { requestId } }`.',
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Meta: {
        type: 'object',
        required: ['requestId'],
        properties: { requestId: { type: 'string', pattern: '^req_' } },
      },
      ErrorEnvelope: {
        type: 'object',
        required: ['error', 'meta'],
        properties: {
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: {
              code: { type: 'string' },
              message: { type: 'string' },
              fields: { type: 'array', items: { type: 'string' } },
            },
          },
          meta: ref('Meta'),
        },
      },
      OnboardTenantInput: {
        type: 'object',
        required: ['externalRef', 'name'],
        additionalProperties: false,
        properties: {
          externalRef: externalRefParam.schema,
          name: { type: 'string', minLength: 1, maxLength: 200 },
          fundingMicroUsd: {
            type: 'string',
            pattern: '^[1-9][0-9]{0,29}$',
            description: 'Initial transfer in micro-USD, as a string.',
          },
          options: {
            type: 'object',
            additionalProperties: false,
            properties: {
              balanceRetryInterval: { type: ['string', 'integer'] },
              unknownTransferDeadline: { type: ['string', 'integer'] },
              reconcileInterval: { type: ['string', 'integer'] },
            },
          },
        },
      },
      OnboardingAccepted: {
        type: 'object',
        properties: {
          externalRef: { type: 'string' },
          workflowId: { type: 'string' },
          started: { type: 'boolean' },
          statusUrl: { type: 'string' },
        },
      },
      LifecycleAccepted: {
        type: 'object',
        properties: {
          externalRef: { type: 'string' },
          action: { type: 'string', enum: ['rotate', 'suspend', 'resume', 'close'] },
          workflowId: { type: 'string' },
          runId: { type: ['string', 'null'] },
          statusUrl: { type: 'string' },
        },
      },
      TenantStatus: {
        type: 'object',
        description:
          'Our records, the onboarding progress, and `lastRuns`: the last run of each kind ' +
          '(onboard, rotate per slot, suspend, resume, close) with `status`, `outcome` and, ' +
          'for a run that did not complete, `failure: { message, type, causes }`. Never a ' +
          'secret: keys appear as id and fingerprint.',
      },
      Payloads: {
        type: 'object',
        description:
          'An absent body, `{}` or a missing payloads list mean no payloads (protojson omits an empty list).',
        properties: {
          payloads: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                metadata: { type: 'object', additionalProperties: { type: 'string', contentEncoding: 'base64' } },
                data: { type: 'string', contentEncoding: 'base64' },
              },
            },
          },
        },
      },
      RegistryDelivery: {
        type: 'object',
        required: ['event', 'deliveryId', 'webhookId'],
        properties: {
          event: { type: 'string' },
          deliveryId: { type: 'string' },
          webhookId: { type: 'string' },
          payload: { type: 'object' },
          timestamp: { type: 'string' },
        },
      },
    },
  },
  paths: {
    '/v1/tenants': {
      post: {
        summary: 'Start (or join) the onboarding of a tenant',
        description:
          'Idempotent on externalRef: repeated or concurrent calls give one onboarding. Poll the status URL.',
        operationId: 'onboardTenant',
        security: [{ bearer: [] }],
        requestBody: { required: true, content: json(ref('OnboardTenantInput')) },
        responses: {
          '202': {
            description: 'Started, or already running/done.',
            headers: { Location: { schema: { type: 'string' } } },
            content: json(dataEnvelope(ref('OnboardingAccepted'))),
          },
          '400': errorResponse('Invalid input; `fields` names the offending fields (INVALID_INPUT, INVALID_JSON).'),
          ...authErrors,
          '409': errorResponse('The external ref is being onboarded under another name (EXTERNAL_REF_CONFLICT).'),
          '200': {
            description:
              'With `?dryRun=true`: every check passed (`{ dryRun, ok, checks, plan }`); ' +
              'nothing was written or started.',
            content: json(dataEnvelope({ type: 'object' })),
          },
          '422': {
            description:
              'With `?dryRun=true`: a check cannot pass (the same report, `ok: false`); nothing was written.',
            content: json(dataEnvelope({ type: 'object' })),
          },
        },
        parameters: [
          { name: 'dryRun', in: 'query', required: false, schema: { type: 'string', enum: ['true', 'false'] } },
        ],
      },
    },
    '/v1/tenants/{externalRef}/statement': {
      get: {
        summary:
          "A closed tenant's final statement (transfers, balance left, keys, projects deleted, audit; no secret)",
        operationId: 'getCloseStatement',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'The statement.', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND) or no statement yet (STATEMENT_NOT_FOUND).'),
        },
      },
    },
    '/v1/approvals': {
      get: {
        summary: 'Four-eyes requests awaiting a second operator (operator token only)',
        operationId: 'listApprovals',
        security: [{ bearer: [] }],
        responses: {
          '200': { description: 'The requests.', content: json(dataEnvelope({ type: 'array' })) },
          ...authErrors,
          '403': errorResponse('Not an operator token (FORBIDDEN).'),
        },
      },
    },
    '/v1/approvals/{id}/{decision}': {
      post: {
        summary: 'Approve or reject a request another operator asked for (operator token only; body `{ "reason" }`)',
        operationId: 'decideApproval',
        security: [{ bearer: [] }],
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'decision', in: 'path', required: true, schema: { type: 'string', enum: ['approve', 'reject'] } },
        ],
        responses: {
          '200': {
            description: 'Decided (an approved resolveTransfer is sent).',
            content: json(dataEnvelope({ type: 'object' })),
          },
          '400': errorResponse('A reason is required (INVALID_INPUT).'),
          ...authErrors,
          '403': errorResponse('Not an operator token, or the requester itself (FORBIDDEN, SELF_APPROVAL).'),
          '404': errorResponse('No such request (APPROVAL_NOT_FOUND).'),
          '409': errorResponse('Already decided or expired (APPROVAL_NOT_PENDING, APPROVAL_EXPIRED).'),
        },
      },
    },
    '/v1/tenants/{externalRef}': {
      get: {
        summary: "A tenant's records and onboarding progress",
        operationId: 'getTenantStatus',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'The status.', content: json(dataEnvelope(ref('TenantStatus'))) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
    },
    '/v1/tenants/{externalRef}/rotate': lifecycle('rotate', 'rotateTenantKey', bodySchema(rotateBodySchema)),
    '/v1/tenants/{externalRef}/suspend': lifecycle('suspend', 'suspendTenant', bodySchema(lifecycleBodySchema)),
    '/v1/tenants/{externalRef}/resume': lifecycle('resume', 'resumeTenant', bodySchema(lifecycleBodySchema)),
    '/v1/tenants/{externalRef}/close': lifecycle('close', 'closeTenant', bodySchema(lifecycleBodySchema)),
    '/v1/tenants/{externalRef}/transfers': {
      post: {
        summary: 'Top up the tenant, exactly once per Idempotency-Key',
        description:
          'Starts fundTenant (id fund:<externalRef>:<key>). The same key and body replay ' +
          'the stored transfer once it settled (kept for good); while it runs, 409 with ' +
          'Retry-After.',
        operationId: 'topUpTenant',
        security: [{ bearer: [] }],
        parameters: [
          externalRefParam,
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: true,
            schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,255}$' },
          },
        ],
        requestBody: { required: true, content: json(bodySchema(topUpBodySchema)) },
        responses: {
          '200': {
            description: 'A replay: the stored transfer of this key (`replayed: true`).',
            content: json(dataEnvelope({ type: 'object' })),
          },
          '202': {
            description: 'Started; Location is the transfer of this key.',
            headers: { Location: { schema: { type: 'string' } } },
            content: json(dataEnvelope({ type: 'object' })),
          },
          '400': errorResponse(
            'Invalid key or body; `fields` names them (INVALID_INPUT, INVALID_JSON). Nothing was started.',
          ),
          ...authErrors,
          '404': errorResponse('No such tenant in our records (TENANT_NOT_FOUND).'),
          '409': errorResponse(
            'The key is still running (TRANSFER_IN_PROGRESS, with Retry-After), or the tenant ' +
              'is closing/closed (TENANT_CLOSED) or not onboarded (TENANT_NOT_PROVISIONED).',
          ),
          '422': errorResponse('The key was used with another amount or reason (IDEMPOTENCY_KEY_REUSED).'),
        },
      },
      get: {
        summary: "The tenant's ledger: every transfer with purpose, state, keys, who asked and why",
        operationId: 'listTransfers',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'The ledger.', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
    },
    '/v1/tenants/{externalRef}/transfers/{key}': {
      get: {
        summary: 'One top-up by its Idempotency-Key',
        operationId: 'getTransfer',
        security: [{ bearer: [] }],
        parameters: [externalRefParam, { name: 'key', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': { description: 'The transfer.', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('No top-up under this key (TRANSFER_NOT_FOUND).'),
        },
      },
    },
    '/v1/tenants/{externalRef}/keys': {
      get: {
        summary: "A tenant's keys by slot and generation (ids and fingerprints, never a secret)",
        operationId: 'listTenantKeys',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'The keys.', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
    },
    '/v1/tenants/{externalRef}/keys/{slot}/{action}': {
      post: {
        summary: "Issue a slot's key (issueTenantKey), or revoke it through the quiet gate (revokeTenantKeySlot)",
        operationId: 'tenantKeySlotAction',
        security: [{ bearer: [] }],
        parameters: [
          externalRefParam,
          {
            name: 'slot',
            in: 'path',
            required: true,
            schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,31}$' },
          },
          { name: 'action', in: 'path', required: true, schema: { type: 'string', enum: ['issue', 'revoke'] } },
        ],
        requestBody: {
          required: false,
          content: json({
            type: 'object',
            description:
              'issue: { operator?, options?: { keyLimitRetryInterval? } }; revoke: { force?, ' +
              'operator?, reason?, options?: { quietPeriod?, pollInterval?, quietDeadline?, ' +
              'overlapWindow? } } (force needs operator and reason)',
          }),
        },
        responses: {
          '202': { description: 'Started or joined.', content: json(dataEnvelope({ type: 'object' })) },
          '400': errorResponse('Invalid slot or body; `fields` names them (INVALID_INPUT). Nothing was started.'),
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND), or no active key in the slot (KEY_NOT_FOUND).'),
        },
      },
    },
    '/v1/tenants/{externalRef}/funding-policy': {
      put: {
        summary: "Set the tenant's auto top-up policy and spend caps",
        operationId: 'setFundingPolicy',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        requestBody: { required: true, content: json(bodySchema(fundingPolicySchema)) },
        responses: {
          '200': {
            description: 'The policy and what its caps hold today.',
            content: json(dataEnvelope({ type: 'object' })),
          },
          '400': errorResponse('Invalid policy; `fields` names them.'),
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
      get: {
        summary: "The tenant's auto top-up policy and what its caps hold today",
        operationId: 'getFundingPolicy',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'The policy (null when none).', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
      delete: {
        summary: "Clear the tenant's auto top-up policy",
        operationId: 'clearFundingPolicy',
        security: [{ bearer: [] }],
        parameters: [externalRefParam],
        responses: {
          '200': { description: 'Whether a policy was cleared.', content: json(dataEnvelope({ type: 'object' })) },
          ...authErrors,
          '404': errorResponse('Unknown tenant (TENANT_NOT_FOUND).'),
        },
      },
    },
    '/webhooks/registry/{registrationId}': {
      post: {
        summary: 'Registry webhook receiver (called by the platform)',
        description:
          'X-Service-Signature must be sha256= and 64 hex digits: HMAC-SHA256 of the exact ' +
          'body with the webhook secret. The body timestamp must be within the tolerance ' +
          '(default 5 minutes) of our clock. Verified deliveries are recorded once per ' +
          'deliveryId and processed asynchronously.',
        operationId: 'receiveRegistryDelivery',
        parameters: [{ name: 'registrationId', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: { required: true, content: json(ref('RegistryDelivery')) },
        responses: {
          '202': {
            description: 'Recorded (or a duplicate of a recorded delivery).',
            content: json(
              dataEnvelope({
                type: 'object',
                properties: {
                  deliveryId: { type: 'string' },
                  workflowId: { type: 'string' },
                  duplicate: { type: 'boolean' },
                },
              }),
            ),
          },
          '400': errorResponse(
            'INVALID_JSON, DELIVERY_INVALID (also: text no record can hold, such as NUL), or DELIVERY_STALE ' +
              '(timestamp outside the tolerance).',
          ),
          '401': errorResponse(
            'SIGNATURE_MISSING, SIGNATURE_MALFORMED or SIGNATURE_MISMATCH (also the answer for an unknown receiver ' +
              'id: it is not told apart from a wrong signature).',
          ),
          '409': errorResponse(
            'A known deliveryId with a different body (DELIVERY_CONFLICT); recorded, not processed.',
          ),
          '413': errorResponse('PAYLOAD_TOO_LARGE.'),
          '415': errorResponse('UNSUPPORTED_MEDIA_TYPE.'),
        },
      },
    },
    '/codec/encode': codecPath('encode'),
    '/codec/decode': codecPath('decode'),
    '/healthz': {
      get: {
        summary: 'Liveness',
        operationId: 'healthz',
        responses: { '200': { description: 'The process answers.' } },
      },
    },
    '/readyz': {
      get: {
        summary: 'Readiness: Postgres and Temporal reachable',
        operationId: 'readyz',
        responses: { '200': { description: 'Ready.' }, '503': { description: 'Not ready; `checks` says which.' } },
      },
    },
    '/metrics': {
      get: {
        summary: 'Prometheus metrics',
        operationId: 'metrics',
        responses: { '200': { description: 'Text exposition format 0.0.4.' } },
      },
    },
  },
} as const;

function codecPath(operation: 'encode' | 'decode') {
  return {
    post: {
      summary: `Payload codec: ${operation} (Temporal codec server protocol)`,
      operationId: `codec${operation[0]!.toUpperCase()}${operation.slice(1)}`,
      security: [{ bearer: [] }],
      requestBody: { required: false, content: json(ref('Payloads')) },
      responses: {
        '200': { description: 'The payloads, transformed.', content: json(ref('Payloads')) },
        '400': errorResponse('INVALID_INPUT.'),
        ...authErrors,
        '422': errorResponse('CODEC_FAILED.'),
      },
    },
  };
}
