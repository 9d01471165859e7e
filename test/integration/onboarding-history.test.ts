// @temporalio/proto is CommonJS: Node's ESM loader exposes it as a default export only.
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { tenantExternalRefKey, tenantStatusKey, tenantSubaccountIdKey } from '../../src/domain/search-attributes.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';
import { expectExactlyOnce } from '../harness/onboarding-checks.js';
import { eventNames, localActivityMarkersFollowedByCommands, splitTaskAfter } from '../harness/history-split.js';

/**
 * What one onboarding costs Temporal: every event is server and worker work on every run (issue 20).
 * A run started by startOnboarding records at most 14 events and two upserts, and ends searchable
 * by external ref, sub-account and status, as does a run started without search attributes (the
 * Web UI). Both histories replay against the current code.
 */
describe('onboarding history', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('onboarding-history');
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  const replay = (history: Parameters<typeof Worker.runReplayHistory>[1], workflowId: string) =>
    Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, workflowId);

  const eventTypes = async (workflowId: string) => {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    return { history, types: (history.events ?? []).map((event) => event.eventType) };
  };

  const expectSearchable = async (workflowId: string, externalRef: string, subaccountId: string) => {
    const attributes = (await env.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
    expect(attributes.get(tenantExternalRefKey)).toBe(externalRef);
    expect(attributes.get(tenantSubaccountIdKey)).toBe(subaccountId);
    expect(attributes.get(tenantStatusKey)).toBe('active');
  };

  it('records 13 events (at most 14): four local activities, three upserts, one patch, for a run by startOnboarding', async () => {
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'hist-1', name: 'History One', fundingMicroUsd: '1000' },
      { taskQueue: env.taskQueue },
    );
    const result = await handle.result();
    expectExactlyOnce(env.sim.state(), 'hist-1', { amountMicroUsd: '1000' });
    const { history, types } = await eventTypes(handle.workflowId);
    expect(types.length).toBeLessThanOrEqual(14);
    // Four steps: the input's checks with the sub-account, funding, the key (issued and verified), activation.
    expect(eventNames(history).filter((n) => n === 'core_local_activity')).toHaveLength(4);
    expect(types).toHaveLength(13);
    // Sub-account with its stage, then active, and the patch's TemporalChangeVersion; one patch marker (1.0 had 11
    // events, none: onboarding-first-answers-together, asked once as the run starts).
    expect(
      types.filter((t) => t === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
    ).toHaveLength(3);
    expect(eventNames(history).filter((n) => n === 'core_patch')).toHaveLength(1);
    await expectSearchable(handle.workflowId, 'hist-1', result.subaccountId);
    await expect(replay(history, handle.workflowId)).resolves.toBeUndefined();
  });

  it('still sets every search attribute for a run started without them (the Web UI)', async () => {
    const workflowId = 'onboard:hist-webui';
    const handle = await env.client.workflow.start('onboardTenant', {
      taskQueue: env.taskQueue,
      workflowId,
      args: [{ externalRef: 'hist-webui', name: 'Started Bare' }],
    });
    const result = (await handle.result()) as { subaccountId: string };
    await expectSearchable(workflowId, 'hist-webui', result.subaccountId);
    const { history } = await eventTypes(workflowId);
    await expect(replay(history, workflowId)).resolves.toBeUndefined();
  });

  it('replays when a workflow task completes mid-step (a local activity marker in one task, its commands in the next)', async () => {
    // CI's stuck onboarding once: a history with a local activity's marker in one workflow task and the
    // commands after it in the next must replay like the one in which they came together.
    const handle = await startOnboarding(
      env.client,
      { externalRef: 'hist-split', name: 'History Split', fundingMicroUsd: '1000' },
      { taskQueue: env.taskQueue },
    );
    await handle.result();
    const history = await env.client.workflow.getHandle(handle.workflowId).fetchHistory();
    const splits = localActivityMarkersFollowedByCommands(history);
    expect(splits.length).toBeGreaterThanOrEqual(3);
    for (const index of splits)
      await expect(
        replay(splitTaskAfter(history, index), handle.workflowId),
        `split after event ${index + 1}`,
      ).resolves.toBeUndefined();
  });
});
