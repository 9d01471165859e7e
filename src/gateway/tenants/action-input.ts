import { lifecycleInputSchema, parseInput, type LifecycleRequest } from '../../domain/tenant-input.js';
import { rotateTenantKeyInputSchema, type ParsedRotateTenantKeyInput } from '../../domain/rotation-input.js';

/**
 * The bodies of `POST /v1/tenants/:ref/<action>`: the very schemas the CLI and the client helpers use
 * (src/domain/tenant-input.ts, src/domain/rotation-input.ts) minus the external ref, which is the URL path (naming it
 * in the
 * body is an unknown field). Every problem is reported as `field: rule` before anything starts. The
 * OpenAPI document is generated from the same schemas.
 */
// `continued` is a run's own hand-over to its next run (continue-as-new), `closeSooner` the starter's word for an
// admin's sooner close: never a caller's.
export const lifecycleBodySchema = lifecycleInputSchema.omit({ externalRef: true, continued: true, closeSooner: true });
/** `operator` is who asks (audited when an emergency escalates a running rotation); not part of the workflow input. */
export const rotateBodySchema = rotateTenantKeyInputSchema
  .omit({ externalRef: true })
  .extend({ operator: lifecycleInputSchema.shape.operator.optional() });

export type ActionInput =
  | { action: 'suspend' | 'resume' | 'close'; input: LifecycleRequest }
  | { action: 'rotate'; input: ParsedRotateTenantKeyInput; operator: string | undefined };

export function actionInputOf(
  action: 'suspend' | 'resume' | 'close' | 'rotate',
  externalRef: string,
  body: unknown,
): ActionInput {
  // No body is an empty one (then the schema names what is required).
  const fields = body ?? {};
  if (action !== 'rotate') return { action, input: { ...parseInput(lifecycleBodySchema, fields), externalRef } };
  const { operator, ...rest } = parseInput(rotateBodySchema, fields);
  return { action, input: { ...rest, externalRef }, operator };
}
