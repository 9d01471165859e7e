import type { FastifyRequest } from 'fastify';
import type { OperatorDirectory } from '../secrets/operators.js';
import { bearerTokenOf, unauthorized, type TokenSet } from './auth.js';
import { GatewayError, GatewayErrorCode } from './errors.js';

/**
 * /v1 callers are signup backends (GATEWAY_API_TOKENS) or operators (OPERATORS, checked by the hash
 * of their token). Who an operator is comes from the token, never from a typed name.
 */
const operatorOfRequest = new WeakMap<FastifyRequest, string>();

export function requireCaller(
  tokens: TokenSet,
  operators: OperatorDirectory,
): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const token = bearerTokenOf(request.headers.authorization);
    if (token === undefined) throw unauthorized();
    // Both are checked every time: the time taken does not say which kind of token it was.
    const asBackend = tokens.matches(token);
    const operator = operators.size > 0 ? operators.authenticate(token) : undefined;
    if (operator !== undefined) operatorOfRequest.set(request, operator);
    else if (!asBackend) throw unauthorized();
  };
}

/** The authenticated operator of a request, when its bearer is an operator token. */
export function authenticatedOperator(request: FastifyRequest): string | undefined {
  return operatorOfRequest.get(request);
}

/** Operator routes (approvals): an operator token is required; a signup backend's is refused. */
export function requireOperator(request: FastifyRequest): string {
  const operator = operatorOfRequest.get(request);
  if (operator === undefined)
    throw new GatewayError(403, GatewayErrorCode.FORBIDDEN, 'This route takes an operator token (OPERATORS).');
  return operator;
}

/**
 * Who a /v1 action is recorded under. With an OPERATORS list: the authenticated operator (a typed
 * `operator` that names anyone else is refused), or `signup-backend` for a backend token. Without a
 * list (dev stack): the typed name, as before.
 */
export function actingOperator(
  request: FastifyRequest,
  operators: OperatorDirectory,
  typed: string | undefined,
): string | undefined {
  if (operators.size === 0) return typed;
  const authenticated = operatorOfRequest.get(request);
  if (typed !== undefined && typed !== authenticated)
    throw new GatewayError(
      400,
      GatewayErrorCode.INVALID_INPUT,
      'operator: is taken from the operator bearer token when OPERATORS is configured; leave it out',
      { fields: ['operator'] },
    );
  return authenticated ?? 'signup-backend';
}
