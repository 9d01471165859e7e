import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer, DecisionBy } from '../../src/domain/operator-decisions.js';

/** issueTenantKey's stages; `key_limit` is the same actionable state as in rotation. */
export type KeyIssueStage = 'starting' | 'creating_key' | 'key_limit' | 'verifying' | 'issued' | 'existing' | 'aborted';

export interface KeyIssueStatus {
  externalRef: string;
  slot: string;
  stage: KeyIssueStage;
  generation: number | null;
  keyId: string | null;
  fingerprint: string | null;
  /** At the key limit: the tenant's active keys (ids, names, last use; never a secret). */
  activeKeys: Array<{ id: string; name: string | null; lastUsedAt: string | null; lastUseKnown: boolean }>;
  notes: string[];
}

export const keyIssueStatusQuery = defineQuery<KeyIssueStatus>('keyIssueStatus');
/** The same Update name as rotation's: at the key limit, after revoking an unused key, try the create again now. */
export const retryKeyIssueUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('retryKeyCreate');
/** At the key limit: give up this issue (nothing was created). */
export const abortKeyIssueUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('abortKeyIssue');

export type KeyRevokeStage = 'starting' | 'waiting_for_quiet' | 'revoking' | 'revoked' | 'refused';

export interface KeyRevokeStatus {
  externalRef: string;
  slot: string;
  stage: KeyRevokeStage;
  keyId: string | null;
  forced: boolean;
  /** What the quiet gate saw last, in words. */
  verdict: string | null;
  polls: number;
}

export const keyRevokeStatusQuery = defineQuery<KeyRevokeStatus>('keyRevokeStatus');
