import { externalRefSchema, slotSchema } from './tenant-input.js';
import { idempotencyKeySchema } from './top-up-input.js';
import { planNameSchema } from './plans.js';
import {
  keyIssueWorkflowId,
  lifecycleWorkflowId,
  onboardingWorkflowId,
  PARENT_KEY_ROTATION_WORKFLOW_ID,
  planRolloutWorkflowId,
  rotationWorkflowId,
  topUpWorkflowId,
} from './ids.js';

/**
 * The runs that take an operator decision, read back from their workflow id (the business key ids.ts writes):
 * the one decision surface (`POST /v1/runs/:run/decisions/:decision`, `tenantctl decide`) names a run so.
 */
export type DecidingRun =
  | { kind: 'onboarding'; externalRef: string }
  | { kind: 'top-up'; externalRef: string; key: string }
  | { kind: 'close'; externalRef: string }
  | { kind: 'rotation'; externalRef: string; slot: string }
  | { kind: 'key-issue'; externalRef: string; slot: string }
  | { kind: 'plan-rollout'; plan: { name: string; version: number } }
  | { kind: 'parent-key-rotation' };
export type DecidingRunKind = DecidingRun['kind'];

/** How each kind's id is written, for an error that names them. */
export const DECIDING_RUN_SHAPES: Readonly<Record<DecidingRunKind, string>> = {
  onboarding: 'onboard:<ref>',
  'top-up': 'fund:<ref>:<key>',
  close: 'close:<ref>',
  rotation: 'rotate:<ref>:<slot>',
  'key-issue': 'key:<ref>:<slot>',
  'plan-rollout': 'plan-rollout:<plan>@<version>',
  'parent-key-rotation': PARENT_KEY_ROTATION_WORKFLOW_ID,
};

const valid = (schema: { safeParse(value: unknown): { success: boolean } }, value: string) =>
  schema.safeParse(value).success;

/** The run a workflow id names, or null when it names none that takes a decision (or a part breaks its rule). */
export function decidingRunOf(workflowId: string): DecidingRun | null {
  if (workflowId === PARENT_KEY_ROTATION_WORKFLOW_ID) return { kind: 'parent-key-rotation' };
  const colon = workflowId.indexOf(':');
  if (colon < 0) return null;
  const prefix = workflowId.slice(0, colon);
  const rest = workflowId.slice(colon + 1);
  const last = rest.lastIndexOf(':');
  // A ref may hold `:`; a slot and a top-up key do not, so they are read from the end.
  const [head, tail] = last < 0 ? [rest, ''] : [rest.slice(0, last), rest.slice(last + 1)];
  const run = ((): DecidingRun | null => {
    switch (prefix) {
      case 'onboard':
        return valid(externalRefSchema, rest) ? { kind: 'onboarding', externalRef: rest } : null;
      case 'close':
        return valid(externalRefSchema, rest) ? { kind: 'close', externalRef: rest } : null;
      case 'fund':
        return valid(externalRefSchema, head) && valid(idempotencyKeySchema, tail)
          ? { kind: 'top-up', externalRef: head, key: tail }
          : null;
      case 'rotate':
        return valid(externalRefSchema, head) && valid(slotSchema, tail)
          ? { kind: 'rotation', externalRef: head, slot: tail }
          : null;
      case 'key':
        return valid(externalRefSchema, head) && valid(slotSchema, tail)
          ? { kind: 'key-issue', externalRef: head, slot: tail }
          : null;
      case 'plan-rollout': {
        const at = rest.lastIndexOf('@');
        const name = rest.slice(0, at);
        const version = Number(rest.slice(at + 1));
        return at > 0 && valid(planNameSchema, name) && /^[1-9][0-9]{0,8}$/.test(rest.slice(at + 1))
          ? { kind: 'plan-rollout', plan: { name, version } }
          : null;
      }
      default:
        return null;
    }
  })();
  // Read back exactly: an id that parses but is not what ids.ts writes names no run.
  return run && workflowIdOfRun(run) === workflowId ? run : null;
}

/** The workflow id of a deciding run (ids.ts's writers). */
export function workflowIdOfRun(run: DecidingRun): string {
  switch (run.kind) {
    case 'onboarding':
      return onboardingWorkflowId(run.externalRef);
    case 'top-up':
      return topUpWorkflowId(run.externalRef, run.key);
    case 'close':
      return lifecycleWorkflowId('close', run.externalRef);
    case 'rotation':
      return rotationWorkflowId(run.externalRef, run.slot);
    case 'key-issue':
      return keyIssueWorkflowId(run.externalRef, run.slot);
    case 'plan-rollout':
      return planRolloutWorkflowId(run.plan);
    case 'parent-key-rotation':
      return PARENT_KEY_ROTATION_WORKFLOW_ID;
  }
}
