import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { DecisionAnswer, DecisionBy } from '../src/domain/operator-decisions.js';
import type { PlanRef } from '../src/domain/plan-ref.js';
import type { PlanChanges } from '../src/domain/plan-rollout.js';

/**
 * The messages of a tenant's convergence onto a plan version (convergeTenantPlan) and of the paced fleet run
 * that converges every tenant of a plan (rolloutPlan). No secret: refs, slots, versions, key ids.
 */

export type ConvergeStage =
  | 'reading'
  | 'retiring_slots'
  | 'issuing_keys'
  | 'funding'
  | 'applying'
  | 'converged'
  | 'unchanged'
  | 'held'
  | 'skipped';

export interface ConvergeStatus {
  externalRef: string;
  plan: PlanRef;
  stage: ConvergeStage;
  from: PlanRef | null;
  changes: PlanChanges | null;
}

export interface ConvergeTenantPlanResult {
  externalRef: string;
  /**
   * converged: on the version with everything it says; unchanged: it was already; held: a retired slot's key
   * is in use (or another run holds the slot), so nothing of the version was applied and the tenant stays
   * where it was; skipped: the tenant is not active.
   */
  outcome: 'converged' | 'unchanged' | 'held' | 'skipped';
  from: PlanRef | null;
  to: PlanRef;
  changes: PlanChanges | null;
  /** Keys issued for the version's new slots. */
  keys: Array<{ slot: string; keyId: string; outcome: 'issued' | 'existing' }>;
  /** Keys revoked for the slots it retires. */
  retired: Array<{ slot: string; keyId: string }>;
  /** The upgrade funding's top-up: its state (null: none to send). */
  funding: { idempotencyKey: string; state: string } | null;
  /** Why it was held or skipped. */
  reason: string | null;
}

export const convergeStatusQuery = defineQuery<ConvergeStatus>('planConvergenceStatus');

export interface RolloutTotals {
  started: number;
  converged: number;
  unchanged: number;
  held: number;
  skipped: number;
  failed: number;
}

export type RolloutStage = 'running' | 'paused' | 'finished';

export interface RolloutStatus {
  plan: PlanRef;
  /** The plan whose tenants are moved (the plan itself for a new version). */
  from: string;
  stage: RolloutStage;
  /** Who paused it and why (null: not paused). */
  paused: { by: string; reason: string; since: string } | null;
  /** Tenants converged up to this external ref (pages before it are done). */
  after: string | null;
  running: number;
  concurrency: number;
  totals: RolloutTotals;
  /** Up to 50 held tenants with the reason (the count is in totals). */
  held: Array<{ externalRef: string; reason: string }>;
  /** Up to 50 failed tenants with the error. */
  failed: Array<{ externalRef: string; reason: string }>;
}

export type RolloutResult = Omit<RolloutStatus, 'running' | 'paused' | 'stage'> & { stage: 'finished' };

export const rolloutStatusQuery = defineQuery<RolloutStatus>('planRolloutStatus');

/** Stop starting tenants (those running finish); the rollout waits until resumed. */
export const pauseRolloutUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('pauseRollout');
/** Go on from where it paused. */
export const resumeRolloutUpdate = defineUpdate<DecisionAnswer, [DecisionBy]>('resumeRollout');

export const ROLLOUT_SAMPLE = 50;
