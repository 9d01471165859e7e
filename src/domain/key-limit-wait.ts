/**
 * The one text of a run waiting at the platform's active-key limit (issue 46): issueTenantKey, rotateTenantKey,
 * adoptTenantKeys and rotateParentKey all say it this way, naming the one decision verb, `tenantctl decide`, with
 * the run's own workflow id (POST /v1/runs/:run/decisions/:decision).
 */
import { keyIssueWorkflowId, PARENT_KEY_ROTATION_WORKFLOW_ID, rotationWorkflowId } from './ids.js';

/** Which run waits: its id differs, the text and the verb do not. */
export type KeyLimitRun =
  | { kind: 'key-issue'; externalRef: string; slot: string }
  | { kind: 'rotation'; externalRef: string; slot: string }
  | { kind: 'parent-key' };

/** The tenantctl command that sends `decision` (retry-key-create or abort) to the waiting run: `decide`, by its id. */
export function keyLimitDecideCommand(run: KeyLimitRun, decision: 'retry-key-create' | 'abort'): string {
  const runId =
    run.kind === 'key-issue'
      ? keyIssueWorkflowId(run.externalRef, run.slot)
      : run.kind === 'rotation'
        ? rotationWorkflowId(run.externalRef, run.slot)
        : PARENT_KEY_ROTATION_WORKFLOW_ID;
  return `tenantctl decide ${runId} ${decision} --reason <why>`;
}

/** The Update each run's abort is (retry is `retryKeyCreate` everywhere). */
const ABORT_UPDATE = {
  'key-issue': 'abortKeyIssue',
  rotation: 'abortRotation',
  'parent-key': 'abortRotation',
} as const;

export interface KeyLimitWaitInput {
  run: KeyLimitRun;
  /** The active keys the platform named (ids and names only; never a secret). */
  activeKeys: readonly { id: string; name?: string | null }[];
  /** Rotation's guess at the keys nobody uses, when it made one. */
  unused?: readonly string[];
  /** When the create is tried again by itself. */
  retryInMs: number;
}

/** What a run at the active-key limit waits for, in one sentence every surface shows as it is. */
export function keyLimitWaitText(input: KeyLimitWaitInput): string {
  const { run, activeKeys, unused, retryInMs } = input;
  const names = activeKeys.map((k) => k.name ?? k.id).join(', ');
  const seen = unused?.length ? `; keys that look unused: ${unused.join(', ')}` : '; no key looks unused';
  const guess = unused === undefined ? '' : seen;
  const whose = run.kind === 'parent-key' ? 'platform keys' : 'keys';
  return (
    `the platform's active-key limit (${activeKeys.length} active ${whose}: ${names}${guess}): ` +
    `revoke a key nobody uses (a key in use, or another service's, is never revoked to make room), then ` +
    `\`${keyLimitDecideCommand(run, 'retry-key-create')}\` (update retryKeyCreate), or give up with ` +
    `\`${keyLimitDecideCommand(run, 'abort')}\` (update ${ABORT_UPDATE[run.kind]}); ` +
    `the create is tried again by itself in ${retryInMs} ms`
  );
}
