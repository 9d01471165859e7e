import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import type { Activities } from '../../activities/index.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import type { DriftOptions } from '../../activities/drift/options.js';
import type { RotationOptions } from '../../activities/keys/rotation-options.js';
import type { PlatformClient } from '../../src/platform/index.js';
import { DEFAULT_PLATFORM_KEY, type SimulatorOptions } from '../../src/sim/index.js';
import type { ReconcileFleetInput } from '../../src/domain/drift-input.js';
import type { reconcileFleet, ReconcileFleetResult } from '../../workflows/reconcile-fleet.js';
import { createOrchestratorEnv, type OrchestratorEnv } from './onboarding-env.js';
import { startPlatformQueueWorker } from './platform-queue-worker.js';

/**
 * A test file's world for drift: the orchestrator env (database, task queue, simulator, worker) with
 * drift options (policies, a Temporal client for visibility and schedules), the platform-queue
 * worker, and the platform's API called out of band the way an operator's console would.
 */
export interface DriftEnv extends OrchestratorEnv {
  platform: PlatformClient;
  /** The same activities the worker runs (for seeding tenants directly). */
  activities: Activities;
  onboard(externalRef: string): Promise<{ subaccountId: string; keyId: string }>;
  check(input?: ReconcileFleetInput): Promise<ReconcileFleetResult>;
  /** A raw call to the platform API with the parent's platform key; returns the envelope's data. */
  api(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Record<string, unknown>>;
}

export async function createDriftEnv(
  label: string,
  drift: Partial<DriftOptions> = {},
  simOptions: SimulatorOptions = {},
  /** Rotation deps for both workers (a test that rotates needs a deployer). */
  rotation?: RotationOptions,
): Promise<DriftEnv> {
  const visibilityConnection = await Connection.connect({ address: inject('temporalAddress') });
  const temporal = new Client({ connection: visibilityConnection, namespace: inject('temporalNamespace') });
  const driftOptions: DriftOptions = {
    policies: {},
    quietPeriodMs: 3_600_000,
    rotationMaxAgeMs: 90 * 86_400_000,
    temporal,
    ...drift,
  };
  const env = await createOrchestratorEnv(label, simOptions, {
    drift: driftOptions,
    ...(rotation ? { rotation } : {}),
  });
  await env.startOrchestratorWorker();
  // The platform-queue worker runs the worker's activities (built the same way by the harness).
  const {
    platform,
    activities,
    stop: stopPlatformWorker,
  } = await startPlatformQueueWorker(env, { drift: driftOptions, ...(rotation ? { rotation } : {}) });
  let counter = 0;

  return {
    ...env,
    platform,
    activities,
    async onboard(externalRef) {
      const handle = await startOnboarding(
        env.client,
        { externalRef, name: `Tenant ${externalRef}` },
        { taskQueue: env.taskQueue },
      );
      const result = await handle.result();
      return { subaccountId: result.subaccountId, keyId: result.keyId };
    },
    async check(input = {}) {
      counter += 1;
      const workflowId = `drift-test:${input.externalRef ?? 'fleet'}:${counter}`;
      return env.client.workflow.execute<typeof reconcileFleet>('reconcileFleet', {
        taskQueue: env.taskQueue,
        workflowId,
        args: [input],
      });
    },
    async api(method, path, body, headers = {}) {
      const response = await fetch(`${env.sim.apiBase}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${DEFAULT_PLATFORM_KEY}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const json = (await response.json()) as { data?: Record<string, unknown>; error?: unknown };
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json.error)}`);
      return json.data!;
    },
    close: async () => {
      await stopPlatformWorker();
      await env.close();
      await visibilityConnection.close();
    },
  };
}
