import { InvalidInputError } from '../../domain/tenant-input.js';
import type { FastifyReply } from 'fastify';
import { externalRefSchema } from '../../domain/tenant-input.js';
import { GatewayError, GatewayErrorCode, invalidInput, sendData } from './errors.js';

/**
 * What every route does with a JSON body before it looks at a field: one home for the rules, so a
 * route answers a bad body as every other route does (400 INVALID_INPUT naming the field).
 */

/** One field's problem as the gateway answers it. */
export function badField(field: string, rule: string): GatewayError {
  return invalidInput(new InvalidInputError([`${field}: ${rule}`]));
}

/**
 * The body as an object (none is an empty one). With `known`, a field outside it is refused by name:
 * a typo never passes as an omission.
 */
export function bodyOf(raw: unknown, known?: readonly string[]): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw badField('body', 'must be a JSON object');
  const body = raw as Record<string, unknown>;
  if (known) refuseUnknown(Object.fromEntries(Object.entries(body).filter(([field]) => !known.includes(field))));
  return body;
}

/** Refuses whatever fields are left once a route took the ones it knows. */
export function refuseUnknown(rest: Record<string, unknown>): void {
  const unknown = Object.keys(rest);
  if (unknown.length)
    throw invalidInput(new InvalidInputError(unknown.map((field) => `${field}: is not a known field`)));
}

/** A command named in the path (`…/:command`), one of `allowed`; any other is 404 naming the choices. */
export function pathCommand<C extends string>(params: unknown, allowed: readonly C[]): C {
  const { command } = params as { command?: string };
  if (command === undefined || !(allowed as readonly string[]).includes(command))
    throw new GatewayError(404, GatewayErrorCode.ROUTE_NOT_FOUND, `No such command; use one of ${allowed.join(', ')}.`);
  return command as C;
}

export function accepted(reply: FastifyReply, location: string, data: Record<string, unknown>) {
  void reply.header('Location', location);
  return sendData(reply, 202, data);
}

export function refOf(params: unknown): string {
  const parsed = externalRefSchema.safeParse((params as { externalRef?: unknown }).externalRef);
  if (!parsed.success)
    throw new GatewayError(
      400,
      GatewayErrorCode.INVALID_INPUT,
      `externalRef: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      { fields: ['externalRef'] },
    );
  return parsed.data;
}
