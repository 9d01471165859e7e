import { WorkflowFailedError, type Client } from '@temporalio/client';
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  TerminatedFailure,
} from '@temporalio/common';
import { startLifecycle } from '../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { startRotation } from '../src/client/keys/start-rotation.js';
import { startTopUp } from '../src/client/money/start-top-up.js';
import { sleep } from '../src/infra/cleanup.js';
import type { Plan, TenantPlan } from './plan.js';
import { lifecycleWorkflowId, onboardingWorkflowId, rotationWorkflowId, topUpWorkflowId } from '../src/domain/ids.js';

/** One operation the run asked for, and how it ended as its starter saw it. */
export interface Operation {
  kind: 'onboard' | 'top-up' | 'rotate' | 'suspend' | 'close';
  externalRef: string;
  workflowId: string;
  /**
   * `completed`, `cancelled`, `terminated`, `failed:<type>`, `start-failed`, `wait-failed`, or `unfinished` (the
   * deadline came first).
   */
  outcome: string;
  /** Outcomes that are correct for this operation (a rotation a close raced may be cancelled). */
  accepted: string[];
  detail: string | null;
  /** When it was started and when its outcome came (ms since the epoch; null: unfinished). */
  startedAt?: number;
  endedAt?: number | null;
}

interface Restart {
  workflowId: string;
  start: () => Promise<{ result(): Promise<unknown> }>;
}

// Seconds, so a rotation finishes in a few seconds; the gate logic is the production one.
export const ROTATION_TIMINGS = {
  quietPeriod: '2s',
  propagationAllowance: '1s',
  pollInterval: '1s',
  quietDeadline: '10m',
} as const;
const ONBOARDING_TIMINGS = { reconcileInterval: '2s', unknownTransferDeadline: '10m' } as const;
const TOP_UP_TIMINGS = { reconcileInterval: '2s', unknownTransferDeadline: '10m' } as const;
const CLOSE_OPTIONS = { pollInterval: '1s', unknownTransferDeadline: '10m' } as const;

/**
 * Plays the plan against the cluster as a signup backend and operators would: onboardings at a
 * steady rate through `startOnboarding`, then per tenant its rotations (`startRotation`) and its
 * close (`startLifecycle`), some closes racing a running rotation. Every start and wait gives up
 * at the run's deadline; what was unfinished then is left for the checker to explain.
 */
export class Driver {
  readonly operations: Operation[] = [];
  /** What starts each operation again (`again`): the same start, or a top-up's under a key of its own. */
  readonly #starts = new Map<Operation, Restart>();
  completed = 0;
  started = 0;
  #stop: Promise<'stopped'>;
  #stopNow!: () => void;
  /** Set by a stop that also starts nothing new (a load that stalled): the plan's later operations are skipped. */
  #startNothing = false;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly plan: Plan,
    private readonly startRate: number,
    /** The onboardings' workflow task timeout (the overlap mode's short one); absent: Temporal's default. */
    private readonly workflowTaskTimeout?: string,
  ) {
    this.#stop = new Promise((resolve) => (this.#stopNow = () => resolve('stopped')));
  }

  /**
   * Stop waiting: every operation not finished yet is recorded as `unfinished`. With `startNothingNew`, the plan's
   * operations not yet started are skipped (not asked for, not recorded) instead of started unwatched.
   */
  stop(options: { startNothingNew?: boolean } = {}): void {
    if (options.startNothingNew) this.#startNothing = true;
    this.#stopNow();
  }

  /** Waits again after a stop (for the operations started `again`, or waited for `again`), until the next `stop`. */
  resume(): void {
    this.#startNothing = false;
    this.#stop = new Promise((resolve) => (this.#stopNow = () => resolve('stopped')));
  }

  /** Operations started and not yet ended. */
  get inFlight(): number {
    return this.operations.filter((op) => op.outcome === 'unfinished').length;
  }

  async run(): Promise<void> {
    const scripts: Promise<void>[] = [];
    for (const tenant of this.plan.tenants) {
      scripts.push(this.#tenantScript(tenant));
      const stopped = await Promise.race([sleep(1000 / this.startRate), this.#stop]);
      if (stopped === 'stopped') break;
    }
    await Promise.all(scripts);
  }

  async #tenantScript(tenant: TenantPlan): Promise<void> {
    const { externalRef } = tenant;
    const onboarded = await this.#operate(
      'onboard',
      externalRef,
      onboardingWorkflowId(externalRef),
      ['completed'],
      async () =>
        startOnboarding(
          this.client,
          { externalRef, name: tenant.name, fundingMicroUsd: tenant.fundingMicroUsd, options: ONBOARDING_TIMINGS },
          { taskQueue: this.taskQueue, workflowTaskTimeout: this.workflowTaskTimeout },
        ),
    );
    if (onboarded !== 'completed') return;
    for (const [n, amountMicroUsd] of tenant.topUps.entries()) {
      const topUp = (idempotencyKey: string) => () =>
        startTopUp(
          this.client,
          { externalRef, idempotencyKey, amountMicroUsd, requestedBy: 'chaos', options: TOP_UP_TIMINGS },
          { taskQueue: this.taskQueue },
        );
      const key = `chaos-top-up-${n + 1}`;
      // A key's outcome is final (its run answers every request of it): asked again, it is under a key of its own.
      const again = { workflowId: topUpWorkflowId(externalRef, `${key}-again`), start: topUp(`${key}-again`) };
      await this.#operate('top-up', externalRef, topUpWorkflowId(externalRef, key), ['completed'], topUp(key), again);
    }
    const closeInput = { externalRef, reason: 'chaos run: tenant leaves', operator: 'chaos', options: CLOSE_OPTIONS };
    const rotationId = rotationWorkflowId(externalRef, 'default');
    const rotate = (emergency: boolean, accepted: string[]) =>
      this.#operate('rotate', externalRef, rotationId, accepted, () =>
        startRotation(
          this.client,
          { externalRef, slot: 'default', emergency, reason: 'chaos run', options: ROTATION_TIMINGS },
          { taskQueue: this.taskQueue, operator: 'chaos' },
        ),
      );

    if (tenant.close === 'racing-rotation') {
      // The close may find the rotation anywhere: before it began (it is then refused), mid-way
      // (cancelled and rolled back) or done. Either way no extra key may survive.
      const rotation = rotate(tenant.rotations[0] ?? false, ['completed', 'cancelled', 'failed:TENANT_CLOSED']);
      await Promise.race([sleep(Math.floor(Math.random() * 2500)), this.#stop]);
      await Promise.all([
        rotation,
        this.#operate('close', externalRef, lifecycleWorkflowId('close', externalRef), ['completed'], () =>
          startLifecycle(this.client, 'close', closeInput, { taskQueue: this.taskQueue }),
        ),
      ]);
      return;
    }
    for (const emergency of tenant.rotations) {
      if ((await rotate(emergency, ['completed'])) !== 'completed') return;
    }
    if (tenant.suspend) {
      const suspendInput = { externalRef, reason: 'chaos run: tenant paused', operator: 'chaos' };
      await this.#operate('suspend', externalRef, lifecycleWorkflowId('suspend', externalRef), ['completed'], () =>
        startLifecycle(this.client, 'suspend', suspendInput, { taskQueue: this.taskQueue }),
      );
    }
    if (tenant.close === 'after-rotations') {
      await this.#operate('close', externalRef, lifecycleWorkflowId('close', externalRef), ['completed'], () =>
        startLifecycle(this.client, 'close', closeInput, { taskQueue: this.taskQueue }),
      );
    }
  }

  async #operate(
    kind: Operation['kind'],
    externalRef: string,
    workflowId: string,
    accepted: string[],
    start: () => Promise<{ result(): Promise<unknown> }>,
    restart: Restart = { workflowId, start },
  ): Promise<string> {
    if (this.#startNothing) return 'skipped';
    const operation: Operation = {
      kind,
      externalRef,
      workflowId,
      outcome: 'unfinished',
      accepted,
      detail: null,
      startedAt: Date.now(),
      endedAt: null,
    };
    this.operations.push(operation);
    this.#starts.set(operation, restart);
    this.started += 1;
    let handle: { result(): Promise<unknown> } | 'stopped';
    try {
      const started = start();
      started.catch(() => undefined); // a start the deadline left behind ends unobserved
      handle = await Promise.race([started, this.#stop]);
    } catch (error) {
      return this.#ended(operation, 'start-failed', error);
    }
    if (handle === 'stopped') return operation.outcome;
    return this.#awaitEnd(operation, handle.result());
  }

  /** The operation's run to its end, or to the next stop (left `unfinished`). */
  async #awaitEnd(operation: Operation, result: Promise<unknown>): Promise<string> {
    // A wait the deadline left behind may still be polling when the connection closes: its end is nobody's.
    result.catch(() => undefined);
    try {
      if ((await Promise.race([result, this.#stop])) === 'stopped') return operation.outcome;
      operation.outcome = 'completed';
      operation.endedAt = Date.now();
    } catch (error) {
      return this.#ended(
        operation,
        error instanceof WorkflowFailedError ? failureOf(error).outcome : 'wait-failed',
        error,
      );
    }
    this.completed += 1;
    return operation.outcome;
  }

  /**
   * The same operation started again, waited for like the first, which must now complete: what the runbook's last
   * step does for a run that failed while the records were behind the platform (a restore).
   */
  async again(operation: Operation): Promise<string> {
    const restart = this.#starts.get(operation);
    if (!restart) throw new Error(`no start recorded for ${operation.workflowId}`);
    return this.#operate(operation.kind, operation.externalRef, restart.workflowId, ['completed'], restart.start);
  }

  /**
   * An operation the stop left unfinished, waited for again to its end (its run, started once, goes on): a run that
   * waited for the recovery (its tenant's record gone, waiting for the import) must now complete.
   */
  async awaitUnfinished(operation: Operation): Promise<string> {
    if (operation.outcome !== 'unfinished') return operation.outcome;
    return this.#awaitEnd(operation, this.client.workflow.getHandle(operation.workflowId).result());
  }

  #ended(operation: Operation, outcome: string, error: unknown): string {
    operation.outcome = outcome;
    operation.endedAt = Date.now();
    operation.detail = failureOf(error).message;
    this.completed += 1;
    return outcome;
  }
}

/** `cancelled`, `terminated` or `failed:<ApplicationFailure type>`, with the deepest message. */
export function failureOf(error: unknown): { outcome: string; message: string } {
  let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
  let message = error instanceof Error ? error.message : String(error);
  while (cause) {
    if (cause instanceof Error) message = cause.message;
    if (cause instanceof CancelledFailure) return { outcome: 'cancelled', message };
    if (cause instanceof TerminatedFailure) return { outcome: 'terminated', message };
    if (cause instanceof ApplicationFailure) return { outcome: `failed:${cause.type ?? 'Error'}`, message };
    cause =
      cause instanceof ActivityFailure || cause instanceof ChildWorkflowFailure || cause instanceof Error
        ? (cause as Error).cause
        : undefined;
  }
  return { outcome: 'failed:unknown', message };
}
