import { randomBytes } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DeployerNotConfiguredError } from '../../client/keys/deployer-readiness.js';
import { ApprovalError } from '../../client/approvals/approvals.js';
import { StatementNotFoundError } from '../../client/tenants/close-statement.js';
import { DriftScheduleNotFoundError } from '../../client/drift/drift-schedules.js';
import {
  DuplicateSubscriptionError,
  EventNotFoundError,
  SubscriptionNotFoundError,
} from '../../client/events/events.js';
import { ParentKeyNamingError } from '../../client/parent-key/parent-key.js';
import { ConvergenceNotFoundError, RolloutNotFoundError } from '../../client/plans/plan-rollout.js';
import { PlanExistsError, PlanNotFoundError, PlanVersionConflictError } from '../../client/plans/plans.js';
import { NoActiveKeyError } from '../../client/keys/reveal-key.js';
import { RotationScheduleNotFoundError } from '../../client/keys/rotation-schedules.js';
import { ExternalRefConflictError } from '../../client/tenants/start-onboarding.js';
import { TopUpNotAllowedError } from '../../client/money/top-up-precheck.js';
import { WebhookManagementError } from '../../client/webhooks/webhook-management.js';
import { PlatformError } from '../../platform/index.js';
import { RegistrationNotFoundError } from '../../domain/record-errors.js';
import { DecisionRefusedError } from '../../client/send-decision.js';
import { RotationConflictError } from '../../client/keys/start-rotation.js';
import { TenantNotFoundError } from '../../domain/record-errors.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { TenantRefusedError } from '../../domain/tenant-rules.js';
import type { Logger } from '../../infra/log.js';

/**
 * One error envelope for every gateway answer: `{ error: { code, message, fields? }, meta: { requestId } }`
 * (successes: `{ data, meta: { requestId } }`), the platform's own shape. Codes come from this closed list.
 */
export const GatewayErrorCode = {
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  ROUTE_NOT_FOUND: 'ROUTE_NOT_FOUND',
  TENANT_NOT_FOUND: 'TENANT_NOT_FOUND',
  TENANT_NOT_PROVISIONED: 'TENANT_NOT_PROVISIONED',
  TENANT_CLOSED: 'TENANT_CLOSED',
  /** A key rotation or a new key for a tenant that is not active (e.g. suspended) (409). */
  TENANT_NOT_ACTIVE: 'TENANT_NOT_ACTIVE',
  /** A resume of a tenant whose delayed close waits out its window: cancel the close instead (409). */
  CLOSE_SCHEDULED: 'CLOSE_SCHEDULED',
  /**
   * A resume of a tenant whose wallet is below its resume floor (its plan's, or RESUME_BALANCE_FLOOR_MICRO_USD) (409).
   */
  BALANCE_BELOW_FLOOR: 'BALANCE_BELOW_FLOOR',
  /**
   * A top-up of a tenant whose records were restored from a backup, before a drift check of it has run (409): the
   * message names the command (`tenantctl drift check R`).
   */
  RECORDS_RESTORED: 'RECORDS_RESTORED',
  /** A transfer of an amount the platform already refused for the parent's balance, or more (409). */
  PARENT_INSUFFICIENT_BALANCE: 'PARENT_INSUFFICIENT_BALANCE',
  DEPLOYER_NOT_CONFIGURED: 'DEPLOYER_NOT_CONFIGURED',
  DELIVERY_CONFLICT: 'DELIVERY_CONFLICT',
  DELIVERY_STALE: 'DELIVERY_STALE',
  EXTERNAL_REF_CONFLICT: 'EXTERNAL_REF_CONFLICT',
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  TRANSFER_IN_PROGRESS: 'TRANSFER_IN_PROGRESS',
  TRANSFER_NOT_FOUND: 'TRANSFER_NOT_FOUND',
  WEBHOOK_NOT_FOUND: 'WEBHOOK_NOT_FOUND',
  INVALID_INPUT: 'INVALID_INPUT',
  INVALID_JSON: 'INVALID_JSON',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  SIGNATURE_MISSING: 'SIGNATURE_MISSING',
  SIGNATURE_MALFORMED: 'SIGNATURE_MALFORMED',
  SIGNATURE_MISMATCH: 'SIGNATURE_MISMATCH',
  DELIVERY_INVALID: 'DELIVERY_INVALID',
  CODEC_NOT_CONFIGURED: 'CODEC_NOT_CONFIGURED',
  CODEC_FAILED: 'CODEC_FAILED',
  TEMPORAL_UNAVAILABLE: 'TEMPORAL_UNAVAILABLE',
  INTERNAL_ERROR: 'INTERNAL_ERROR',
  STATEMENT_NOT_FOUND: 'STATEMENT_NOT_FOUND',
  APPROVAL_NOT_FOUND: 'APPROVAL_NOT_FOUND',
  APPROVAL_NOT_PENDING: 'APPROVAL_NOT_PENDING',
  APPROVAL_EXPIRED: 'APPROVAL_EXPIRED',
  SELF_APPROVAL: 'SELF_APPROVAL',
  PREFLIGHT_FAILED: 'PREFLIGHT_FAILED',
  KEY_NOT_FOUND: 'KEY_NOT_FOUND',
  SUBSCRIPTION_NOT_FOUND: 'SUBSCRIPTION_NOT_FOUND',
  SUBSCRIPTION_DUPLICATE: 'SUBSCRIPTION_DUPLICATE',
  EVENT_NOT_FOUND: 'EVENT_NOT_FOUND',
  /** A webhook registration whose state does not allow this now (deleted, being created or replaced) (409). */
  WEBHOOK_STATE_CONFLICT: 'WEBHOOK_STATE_CONFLICT',
  /**
   * This gateway lacks what the route needs to call the platform (PLATFORM_BASE_URL, PLATFORM_PERSONAL_TOKEN, the
   * parent key, GATEWAY_PUBLIC_URL for receiver URLs) (503).
   */
  PLATFORM_NOT_CONFIGURED: 'PLATFORM_NOT_CONFIGURED',
  /** The platform refused the call or gave no answer; its code and request id are named (502). */
  PLATFORM_FAILED: 'PLATFORM_FAILED',
  /** An operator decision the waiting run refuses now (its Update validator says why) (409). */
  DECISION_NOT_APPLICABLE: 'DECISION_NOT_APPLICABLE',
  /** No run under this business key (nothing waits for the decision) (404). */
  RUN_NOT_FOUND: 'RUN_NOT_FOUND',
  SCHEDULE_NOT_FOUND: 'SCHEDULE_NOT_FOUND',
  /** A rotation of the slot is running, or the slot holds only unmanaged keys (409). */
  ROTATION_CONFLICT: 'ROTATION_CONFLICT',
  /** No plan of this name, or no such version of it (404). */
  PLAN_NOT_FOUND: 'PLAN_NOT_FOUND',
  /** A plan of this name exists already: an update makes its next version (409). */
  PLAN_EXISTS: 'PLAN_EXISTS',
  /** The plan's latest version is not the one the update expected, or another update made it first (409). */
  PLAN_VERSION_CONFLICT: 'PLAN_VERSION_CONFLICT',
  /** No rollout of this plan version was ever started (404). */
  ROLLOUT_NOT_FOUND: 'ROLLOUT_NOT_FOUND',
} as const;
export type GatewayErrorCode = (typeof GatewayErrorCode)[keyof typeof GatewayErrorCode];

export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly status: number,
    readonly code: GatewayErrorCode,
    message: string,
    readonly extra: { fields?: string[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

export function sendData(reply: FastifyReply, status: number, data: unknown): FastifyReply {
  return reply.code(status).send({ data, meta: { requestId: reply.request.id } });
}

export function sendError(
  reply: FastifyReply,
  status: number,
  code: GatewayErrorCode,
  message: string,
  fields?: string[],
): FastifyReply {
  const error = fields === undefined ? { code, message } : { code, message, fields };
  return reply.code(status).send({ error, meta: { requestId: reply.request.id } });
}

/**
 * Fastify's own errors mapped to our codes; anything unexpected is a 500 with a fixed message (no stack, no detail).
 */
export function answerError(
  logger: Logger | undefined,
  thrown: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const error = typedErrorAnswer(thrown) ?? thrown;
  if (error instanceof GatewayError) {
    for (const [name, value] of Object.entries(error.extra.headers ?? {})) void reply.header(name, value);
    void sendError(reply, error.status, error.code, error.message, error.extra.fields);
    return;
  }
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      void sendError(reply, 413, GatewayErrorCode.PAYLOAD_TOO_LARGE, 'The request body is too large.');
      return;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      void sendError(
        reply,
        415,
        GatewayErrorCode.UNSUPPORTED_MEDIA_TYPE,
        'Request bodies must be JSON (Content-Type: application/json).',
      );
      return;
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      void sendError(reply, 400, GatewayErrorCode.INVALID_JSON, 'The request body is not valid JSON.');
      return;
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    void sendError(reply, status, GatewayErrorCode.INVALID_INPUT, 'The request could not be read.');
    return;
  }
  logger?.error({ err: error, requestId: request.id, route: request.routeOptions.url }, 'gateway request failed');
  void sendError(
    reply,
    500,
    GatewayErrorCode.INTERNAL_ERROR,
    'Internal error; quote the request id when reporting it.',
  );
}

// The typed errors of the layers below, each answered one way, here (routes call these; none maps its own).

/** How the platform's refusal (or silence) is told: its code, status and request id, nothing else. */
export function platformFailed(error: PlatformError, suffix = ''): GatewayError {
  return new GatewayError(
    502,
    GatewayErrorCode.PLATFORM_FAILED,
    `The platform answered ${error.platformCode ?? error.code}${error.status ? ` (${error.status})` : ''}` +
      `${error.requestId ? `, request ${error.requestId}` : ''}${suffix}.`,
  );
}

const notFound = (code: GatewayErrorCodeName) => (error: Error) =>
  new GatewayError(404, GatewayErrorCode[code], `${error.message}.`);
type GatewayErrorCodeName = keyof typeof GatewayErrorCode;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- error classes with their own constructor arguments
type ErrorClass<E> = abstract new (...args: any[]) => E;
const answer = <E extends Error>(type: ErrorClass<E>, to: (error: E) => GatewayError) => ({ type, to });

/**
 * The one mapping of the layers' typed errors to answers, applied by the gateway's error handler to whatever a route
 * lets through: a route throws what its client call threw, and maps nothing itself. Each error is answered one way;
 * the first entry it is an instance of answers it, so a subclass comes before its parent.
 */
const TYPED_ERRORS = [
  answer(DecisionRefusedError, decisionRefused),
  answer(TenantNotFoundError, (e) => tenantNotFound(e.externalRef)),
  answer(TenantRefusedError, tenantRefused),
  answer(RotationConflictError, (e) => new GatewayError(409, GatewayErrorCode.ROTATION_CONFLICT, `${e.message}.`)),
  answer(
    DeployerNotConfiguredError,
    (e) => new GatewayError(422, GatewayErrorCode.DEPLOYER_NOT_CONFIGURED, `${e.message}.`, { fields: ['deployer'] }),
  ),
  answer(PlatformError, (e) => platformFailed(e)),
  answer(ParentKeyNamingError, (e) =>
    e.kind === 'missing'
      ? new GatewayError(404, GatewayErrorCode.KEY_NOT_FOUND, `${e.message}.`)
      : new GatewayError(409, GatewayErrorCode.DECISION_NOT_APPLICABLE, `${e.message}.`),
  ),
  answer(
    NoActiveKeyError,
    (e) => new GatewayError(404, GatewayErrorCode.KEY_NOT_FOUND, `${e.message}.`, { fields: ['slot'] }),
  ),
  answer(
    RegistrationNotFoundError,
    () => new GatewayError(404, GatewayErrorCode.WEBHOOK_NOT_FOUND, 'No webhook registration with this id.'),
  ),
  answer(WebhookManagementError, (e) => {
    if (e.code === 'PROJECT_NOT_OF_TENANT') return invalidInput(new InvalidInputError([`projectId: ${e.message}`]));
    if (e.code === 'TENANT_NOT_PROVISIONED')
      return new GatewayError(409, GatewayErrorCode.TENANT_NOT_PROVISIONED, `${e.message}.`);
    return new GatewayError(409, GatewayErrorCode.WEBHOOK_STATE_CONFLICT, `${e.message}.`);
  }),
  answer(PlanNotFoundError, notFound('PLAN_NOT_FOUND')),
  answer(
    PlanExistsError,
    (e) => new GatewayError(409, GatewayErrorCode.PLAN_EXISTS, `${e.message}.`, { fields: ['name'] }),
  ),
  answer(
    PlanVersionConflictError,
    (e) =>
      new GatewayError(409, GatewayErrorCode.PLAN_VERSION_CONFLICT, `${e.message}.`, { fields: ['expectVersion'] }),
  ),
  answer(RolloutNotFoundError, notFound('ROLLOUT_NOT_FOUND')),
  answer(ConvergenceNotFoundError, notFound('RUN_NOT_FOUND')),
  answer(TopUpNotAllowedError, (e) => new GatewayError(409, GatewayErrorCode[e.code], `${e.message}.`)),
  answer(
    ExternalRefConflictError,
    () =>
      new GatewayError(
        409,
        GatewayErrorCode.EXTERNAL_REF_CONFLICT,
        'This external ref is already being onboarded under another name.',
      ),
  ),
  answer(StatementNotFoundError, notFound('STATEMENT_NOT_FOUND')),
  answer(
    DuplicateSubscriptionError,
    (e) => new GatewayError(409, GatewayErrorCode.SUBSCRIPTION_DUPLICATE, e.problems[0]!, { fields: ['url'] }),
  ),
  answer(
    SubscriptionNotFoundError,
    () => new GatewayError(404, GatewayErrorCode.SUBSCRIPTION_NOT_FOUND, 'No live event subscription with this id.'),
  ),
  answer(EventNotFoundError, () => new GatewayError(404, GatewayErrorCode.EVENT_NOT_FOUND, 'No event with this id.')),
  answer(ApprovalError, (e) => {
    const status = e.code === 'APPROVAL_NOT_FOUND' ? 404 : e.code === 'SELF_APPROVAL' ? 403 : 409;
    return new GatewayError(status, GatewayErrorCode[e.code], `${e.message}.`);
  }),
  answer(RotationScheduleNotFoundError, notFound('SCHEDULE_NOT_FOUND')),
  answer(DriftScheduleNotFoundError, notFound('SCHEDULE_NOT_FOUND')),
  // Last: more specific errors extend it (a duplicate subscription is one).
  answer(InvalidInputError, invalidInput),
];

export function typedErrorAnswer(error: unknown): GatewayError | undefined {
  if (error instanceof GatewayError) return undefined;
  for (const { type, to } of TYPED_ERRORS) if (error instanceof type) return to(error as never);
  return undefined;
}

/** No tenant under the ref: named when known (it is the caller's own, checked input). */
export function tenantNotFound(externalRef?: string): GatewayError {
  const which = externalRef === undefined ? '' : ` (${externalRef})`;
  return new GatewayError(404, GatewayErrorCode.TENANT_NOT_FOUND, `No tenant with this external ref${which}.`);
}

/** A tenant the rule refuses (closing or closed, not active, not onboarded): 409 with the rule's code. */
export function tenantRefused(error: TenantRefusedError): GatewayError {
  return new GatewayError(409, GatewayErrorCode[error.code], `${error.message}.`, { fields: [error.field] });
}

export function invalidInput(error: InvalidInputError): GatewayError {
  const fields = [...new Set(error.problems.map((problem) => problem.split(':')[0]!))];
  return new GatewayError(400, GatewayErrorCode.INVALID_INPUT, error.message, { fields });
}

/** The run refused the decision (its validator: it does not apply now), or there is no run to decide for. */
export function decisionRefused(error: DecisionRefusedError): GatewayError {
  if (error.code === 'WORKFLOW_NOT_FOUND')
    return new GatewayError(404, GatewayErrorCode.RUN_NOT_FOUND, `${error.message}.`);
  return new GatewayError(409, GatewayErrorCode.DECISION_NOT_APPLICABLE, `${error.message} [${error.code}].`);
}
