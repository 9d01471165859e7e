import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { SimError, SimErrorCode, validationError } from './errors.js';
import { formatPath } from './seed.js';

/**
 * Validates a request body. Unknown fields are ignored (zod strips them), matching the contract's "clients ignore
 * unknown fields" in the other direction; a missing body is validated as `{}` so the message names the field.
 */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const input = body === undefined ? {} : body;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw validationError('body', 'must be a JSON object');
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw validationError(issue ? formatPath(issue.path) : 'body', issue?.message ?? 'is invalid');
}

export const POSITIVE_INTEGER = /^[1-9][0-9]*$/;

/** Micro-USD amounts: a JSON string of a positive integer, at most 38 digits (numeric(38,0)). */
export const amountMicroUsd = z
  .string({ error: 'must be a string of a positive integer in micro-USD, e.g. "2500000"' })
  .regex(POSITIVE_INTEGER, 'must be a string of a positive integer in micro-USD (^[1-9][0-9]*$), e.g. "2500000"')
  .max(38, 'must have at most 38 digits');

export const requiredText = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const MAX_KEY_LENGTH = 255;

function keyProblem(value: unknown): string | null {
  if (typeof value !== 'string' || value.trim() === '') return 'is missing or blank';
  if (value.length > MAX_KEY_LENGTH) return `is longer than ${MAX_KEY_LENGTH} characters`;
  return null;
}

function requiredKeyError(where: string, problem: string): SimError {
  return new SimError(
    400,
    SimErrorCode.IdempotencyKeyRequired,
    `${where} ${problem}: send a stable, operation-specific key.`,
  );
}

/** The `Idempotency-Key` header of a protected mutation (400 IDEMPOTENCY_KEY_REQUIRED when unusable). */
export function requireHeaderKey(request: FastifyRequest): string {
  const value = request.headers['idempotency-key'];
  const problem = keyProblem(value);
  if (problem) throw requiredKeyError('Idempotency-Key header', problem);
  return value as string;
}

/**
 * Transfers need the key twice, in the header and as body `idempotencyKey`; when the two differ the request is
 * refused (400 IDEMPOTENCY_KEY_MISMATCH) rather than guessing which one the client meant.
 */
export function requireTransferKey(request: FastifyRequest): string {
  const headerKey = requireHeaderKey(request);
  const body = request.body;
  const bodyKey = body && typeof body === 'object' ? (body as Record<string, unknown>).idempotencyKey : undefined;
  const problem = keyProblem(bodyKey);
  if (problem) throw requiredKeyError('Body field idempotencyKey', problem);
  if (bodyKey !== headerKey) {
    throw new SimError(
      400,
      SimErrorCode.IdempotencyKeyMismatch,
      'Idempotency-Key header and body idempotencyKey differ: send the same key in both.',
    );
  }
  return headerKey;
}

/** Lifecycle actions: a key is advised, not required; an absent or blank header means "no key". */
export function optionalHeaderKey(request: FastifyRequest): string | undefined {
  const value = request.headers['idempotency-key'];
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (value.length > MAX_KEY_LENGTH) throw requiredKeyError('Idempotency-Key header', keyProblem(value) ?? '');
  return value;
}
