import { z } from 'zod';
import { InvalidInputError, lifecycleInputSchema, parseInput, type LifecycleRequest } from '../domain/tenant-input.js';
import { rotateTenantKeyInputSchema, type ParsedRotateTenantKeyInput } from '../rotation/input.js';

/**
 * The bodies of `POST /v1/tenants/:ref/<action>`, read with the very schemas the CLI and the client
 * helpers use (src/domain, src/rotation/input.ts): the external ref comes from the path, everything
 * else from the body, and every problem is reported as `field: rule` before anything starts.
 */
export type ActionInput =
  | { action: 'suspend' | 'resume' | 'close'; input: LifecycleRequest }
  | { action: 'rotate'; input: ParsedRotateTenantKeyInput; operator: string | undefined };

const operatorOnly = z.strictObject({ operator: lifecycleInputSchema.shape.operator });

export function actionInputOf(action: 'suspend' | 'resume' | 'close' | 'rotate', externalRef: string, body: unknown): ActionInput {
  const fields = bodyFields(body);
  if (action !== 'rotate') return { action, input: parseInput(lifecycleInputSchema, { ...fields, externalRef }) };
  // `operator` is who asks (audited when an emergency escalates a running rotation); it is not part of the workflow input.
  const { operator, ...rest } = fields;
  const problems: string[] = [];
  const input = collect(problems, () => parseInput(rotateTenantKeyInputSchema, { ...rest, externalRef }));
  const who = operator === undefined ? undefined : collect(problems, () => parseInput(operatorOnly, { operator }).operator);
  if (problems.length > 0) throw new InvalidInputError(problems);
  return { action, input: input!, operator: who };
}

/** No body is an empty one; anything but a JSON object is refused; the path's external ref cannot be overridden. */
function bodyFields(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new InvalidInputError(['input: must be a JSON object']);
  if (Object.hasOwn(body, 'externalRef')) throw new InvalidInputError(['externalRef: is not a known field (the external ref is the URL path)']);
  return body as Record<string, unknown>;
}

function collect<T>(problems: string[], parse: () => T): T | undefined {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
}
