/**
 * Records one history of every workflow the worker registers into test/histories/, for the replay test that makes a
 * non-deterministic change fail CI:
 *   npm run histories:record
 *   npm run histories:record -- closeTenant fundTenant   (every run is made; only these files are written)
 * From 1.0 (package.json's version) the histories there are the baseline every later version must replay
 * (CHANGELOG.md): a recording writes the missing ones (a new workflow) and keeps the others, unless `--replace`.
 * Payloads are recorded unencrypted (PAYLOAD_CODEC=off) and hold no secret: workflows never see one.
 */
import { createServer } from 'node:http';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { findOrBuildTemporalCli } from '../src/infra/temporal-cli.js';
import { startLifecycle } from '../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../src/client/tenants/start-onboarding.js';
import { startTopUp } from '../src/client/money/start-top-up.js';
import { upsertFundingPolicy } from '../src/db/funding-store.js';
import { createPool } from '../src/db/pool.js';
import { createRegistryWebhook } from '../src/client/webhooks/webhook-management.js';
import { createPlatformClient } from '../src/platform/index.js';
import { startDriftCheck } from '../src/client/drift/start-drift-check.js';
import { startAdoption, startRotation } from '../src/client/keys/start-rotation.js';
import { scheduleTenantRotation } from '../src/client/keys/rotation-schedules.js';
import { WORKFLOW_TYPES } from '../src/main/wiring/workflow-types.js';
import { parseMasterKeys } from '../src/secrets/master-keys.js';
import { createVault } from '../src/secrets/vault.js';
import { DEFAULT_PERSONAL_TOKEN } from '../src/sim/index.js';
import { startRecordingStack } from './recording-stack.js';
import {
  eventDispatcherWorkflowId,
  eventStreamWorkflowId,
  importWorkflowId,
  planConvergenceWorkflowId,
  registryDeliveryWorkflowId,
} from '../src/domain/ids.js';
import { subscribeToEvents } from '../src/client/events/events.js';
import { startKeyIssue, startKeyRevoke } from '../src/client/keys/key-slots.js';
import { scheduleParentKeyRotation, startParentKeyRotation } from '../src/client/parent-key/parent-key.js';
import { buildImportPlan } from '../src/client/imports/import-plan.js';
import { applyImport } from '../src/client/imports/import-apply.js';
import { createPlan, updatePlan } from '../src/client/plans/plans.js';
import { startPlanRollout } from '../src/client/plans/plan-rollout.js';

const { config, stack, client, taskQueue, close } = await startRecordingStack();
const ids: Record<string, string> = {};
/** Runs exported by their run id: a later run (a schedule's) took the same workflow id. */
const runIds: Record<string, string> = {};
/** The run a workflow id holds now (the one just finished), to export that run and not a later one. */
async function currentRunId(workflowId: string): Promise<string> {
  return (await client.workflow.getHandle(workflowId).describe()).runId;
}
/**
 * A schedule's action as an operator's run-now makes it: triggered once, its launcher run waited for, the schedule
 * deleted (its next fire is 30 days away, past the recording). Returns the launcher's (schedule-made) workflow id.
 */
async function runScheduleOnce(scheduleId: string): Promise<string> {
  const schedule = client.schedule.getHandle(scheduleId);
  await schedule.trigger('SKIP');
  try {
    for (let i = 0; i < 300; i++) {
      const fired = (await schedule.describe()).info.recentActions[0]?.action.workflow;
      if (fired) {
        await client.workflow.getHandle(fired.workflowId, fired.firstExecutionRunId).result();
        return fired.workflowId;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`schedule ${scheduleId} started no run`);
  } finally {
    await schedule.delete();
  }
}
try {
  const ref = 'history-1';
  // An event subscription first, so the onboarding's events go out through a delivery stream.
  const receiver = createServer((_req, res) => res.writeHead(204).end()).listen(0, '127.0.0.1');
  await new Promise((r) => receiver.once('listening', r));
  const eventsPool = createPool(stack.env.DATABASE_URL!, { max: 1 });
  const { subscription } = await subscribeToEvents(
    {
      pool: eventsPool,
      vault: createVault(parseMasterKeys(stack.env.SECRETS_KEYS!)),
      allowHosts: config.OUTBOUND_ALLOW_HOSTS,
    },
    { url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/events`, types: ['*'] },
    'recording',
  );
  await eventsPool.end();
  const onboarding = await startOnboarding(
    client,
    { externalRef: ref, name: 'History One', fundingMicroUsd: '1000000' },
    { taskQueue },
  );
  await onboarding.result();
  ids.onboardTenant = onboarding.workflowId;

  const rotation = await startRotation(
    client,
    { externalRef: ref, emergency: true, reason: 'recording' },
    { taskQueue },
  );
  await rotation.result();
  ids.rotateTenantKey = rotation.workflowId;
  runIds.rotateTenantKey = await currentRunId(rotation.workflowId);

  // A fleet rotation over the one tenant (no quiet wait), and a drift check of it.
  const fleet = await client.workflow.start('rotateFleet', {
    taskQueue,
    workflowId: 'rotate-fleet:default',
    args: [
      {
        slot: 'default',
        concurrency: 1,
        options: { quietPeriod: '0s', propagationAllowance: '0s', pollInterval: '1s' },
      },
    ],
  });
  await fleet.result();
  ids.rotateFleet = fleet.workflowId;
  const driftPool = createPool(stack.env.DATABASE_URL!, { max: 1 });
  const drift = await startDriftCheck({ client, pool: driftPool }, { externalRef: ref }, { taskQueue });
  await drift.result();
  await driftPool.end();
  ids.reconcileFleet = drift.workflowId;

  for (const action of ['suspend', 'resume'] as const) {
    const handle = await startLifecycle(
      client,
      action,
      { externalRef: ref, reason: 'recording histories' },
      { taskQueue },
    );
    await handle.result();
    ids[`${action}Tenant`] = handle.workflowId;
  }

  // A project with a registry webhook whose delivery goes through the gateway.
  const pool = createPool(stack.env.DATABASE_URL!, { max: 2 });
  const platform = createPlatformClient({
    baseUrl: stack.env.PLATFORM_BASE_URL!,
    personalToken: DEFAULT_PERSONAL_TOKEN,
    platformKey: stack.env.PLATFORM_API_KEY!,
  });
  const { rows } = await pool.query<{ id: string }>(
    `SELECT subaccount_id AS id FROM tenants WHERE external_ref = $1::text`,
    [ref],
  );
  const { project } = await platform.createProject({
    auth: { kind: 'platform', subaccountId: rows[0]!.id },
    name: 'registry',
    region: 'eu-1',
  });
  await createRegistryWebhook(
    { pool, platform, vault: createVault(parseMasterKeys(stack.env.SECRETS_KEYS!)), publicUrl: stack.env.GATEWAY_URL! },
    { externalRef: ref, projectId: project.id, label: 'history', events: ['*'] },
  );
  const emitted = (await (
    await fetch(`${stack.env.SIMULATOR_URL}/__sim/registry/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ projectId: project.id, event: 'image.pushed', image: 'app', tag: 'v1' }),
    })
  ).json()) as { deliveries: Array<{ deliveryId: string }> };
  const registryId = registryDeliveryWorkflowId(emitted.deliveries[0]!.deliveryId);
  for (let i = 0; i < 100; i++) {
    const status = await client.workflow
      .getHandle(registryId)
      .describe()
      .then(
        (d) => d.status.name,
        () => 'NOT_FOUND',
      );
    if (status === 'COMPLETED') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  ids.handleRegistryEvent = registryId;
  await pool.end();

  // A top-up someone asked for, then an automatic one: a funding policy whose threshold is above
  // the balance, swept once (the sweep starts fundTenant as a child).
  const topUp = await startTopUp(
    client,
    { externalRef: ref, idempotencyKey: 'history-top-up-1', amountMicroUsd: '250000', reason: 'recording' },
    { taskQueue },
  );
  await topUp.result();
  ids.fundTenant = topUp.workflowId;
  const policyPool = createPool(stack.env.DATABASE_URL!, { max: 1 });
  await upsertFundingPolicy(policyPool, {
    externalRef: ref,
    belowMicroUsd: '100000000',
    toMicroUsd: '100500000',
    maxPerDayMicroUsd: '1000000000',
    maxPerMonthMicroUsd: null,
    updatedBy: 'recording',
  });
  await policyPool.end();
  const sweep = await client.workflow.start('autoTopUpSweep', {
    taskQueue,
    workflowId: 'auto-top-up-sweep:history',
    args: [{ pageSize: 10 }],
  });
  await sweep.result();
  ids.autoTopUpSweep = sweep.workflowId;

  // A tenant onboarded on a plan, then the plan's next version (a new slot, rotation) rolled out to it.
  const planPool = createPool(stack.env.DATABASE_URL!, { max: 2 });
  await createPlan(planPool, { name: 'history-plan', keySlots: ['default'] }, { actor: 'recording' });
  const planRef = 'history-plan-1';
  const onPlan = await startOnboarding(
    client,
    { externalRef: planRef, name: 'History Plan', plan: 'history-plan' },
    { taskQueue },
  );
  await onPlan.result();
  await updatePlan(
    planPool,
    'history-plan',
    { keySlots: ['default', 'ci'], rotation: { interval: '30d' } },
    { actor: 'recording' },
  );
  const rollout = await startPlanRollout(
    client,
    planPool,
    { plan: 'history-plan', version: 2 },
    { actor: 'recording', taskQueue },
  );
  await client.workflow.getHandle(rollout.workflowId).result();
  await planPool.end();
  ids.rolloutPlan = rollout.workflowId;
  ids.convergeTenantPlan = planConvergenceWorkflowId(planRef);

  // A sub-account made behind our back, with a key we never saw: imported, then its key adopted.
  const importRef = 'history-import-1';
  const made = await platform.createSubaccount({
    name: 'History Import',
    externalRef: importRef,
    idempotencyKey: 'history-import-create-0001',
  });
  await platform.createTenantKey({ subaccountId: made.subaccount.id, name: 'made-by-hand' });
  const importPool = createPool(stack.env.DATABASE_URL!, { max: 2 });
  const plan = await buildImportPlan({ platform, db: importPool });
  const applied = await applyImport({ client, db: importPool }, plan, {
    only: [importRef],
    requestedBy: 'operator:recording',
    taskQueue,
  });
  if (!applied.results.every((r) => r.ok)) throw new Error(`import failed: ${JSON.stringify(applied.results)}`);
  ids.importTenant = importWorkflowId(importRef);
  const adoption = await startAdoption(
    { client, db: importPool },
    {
      externalRef: importRef,
      reason: 'recording',
      options: { quietPeriod: '1s', propagationAllowance: '1s', pollInterval: '300ms' },
    },
    { taskQueue },
  );
  await adoption.result();
  ids.adoptTenantKeys = adoption.workflowId;
  await importPool.end();

  // A key in a second slot, then its revoke (forced: the recording does not wait out a quiet period).
  const slotPool = createPool(stack.env.DATABASE_URL!, { max: 2 });
  const issued = await startKeyIssue({ client, pool: slotPool }, { externalRef: ref, slot: 'ci' }, { taskQueue });
  await issued.result();
  ids.issueTenantKey = issued.workflowId;
  const revoked = await startKeyRevoke(
    { client, pool: slotPool },
    { externalRef: ref, slot: 'ci', force: true, operator: 'recording', reason: 'recording histories' },
    { taskQueue },
  );
  await revoked.result();
  ids.revokeTenantKeySlot = revoked.workflowId;
  await slotPool.end();
  const parentRotation = await startParentKeyRotation(
    client,
    { emergency: true, operator: 'recording', reason: 'recording histories', options: { pollInterval: '300ms' } },
    { taskQueue },
  );
  await parentRotation.result();
  ids.rotateParentKey = parentRotation.workflowId;
  runIds.rotateParentKey = await currentRunId(parentRotation.workflowId);

  // The schedules' launchers, each fired once: the launcher starts the rotation as a child under its business id
  // (rotate:<ref>:<slot>, rotate-parent-key) and waits for it.
  const tenantSchedule = await scheduleTenantRotation(
    client,
    { externalRef: ref, emergency: true, reason: 'recording a scheduled rotation' },
    { every: '30d' },
    taskQueue,
  );
  ids.rotateTenantKeyOnSchedule = await runScheduleOnce(tenantSchedule.scheduleId);
  const parentSchedule = await scheduleParentKeyRotation(
    client,
    {
      emergency: true,
      operator: 'recording',
      reason: 'recording a scheduled rotation',
      options: { pollInterval: '300ms' },
    },
    '30d',
    taskQueue,
  );
  ids.rotateParentKeyOnSchedule = await runScheduleOnce(parentSchedule.scheduleId);

  const close = await startLifecycle(
    client,
    'close',
    { externalRef: ref, reason: 'recording histories' },
    { taskQueue },
  );
  await close.result();
  ids.closeTenant = close.workflowId;

  ids.deliverEventStream = eventStreamWorkflowId(subscription.id, ref);
  ids.dispatchEvents = eventDispatcherWorkflowId(taskQueue);
  receiver.close();

  // The Temporal CLI's own JSON history format, the one `temporal workflow show --output json` prints.
  const cli = await findOrBuildTemporalCli({ cliPath: config.TEMPORAL_CLI_PATH });
  if (!cli) throw new Error('no temporal CLI to export histories with');
  const replace = process.argv.includes('--replace');
  const only = process.argv.slice(2).filter((arg) => arg !== '--replace');
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  const baseline = Number(version.split('.')[0]) >= 1;
  // Every workflow the worker registers has a scenario here (test/unit/histories-coverage.test.ts checks the files).
  const unrecorded = WORKFLOW_TYPES.filter((type) => !(type in ids));
  if (unrecorded.length > 0) throw new Error(`no scenario records ${unrecorded.join(', ')}: add one`);
  const unknown = only.filter((type) => !(type in ids));
  if (unknown.length > 0) throw new Error(`no recorded workflow named ${unknown.join(', ')}`);
  const written: string[] = [];
  for (const [type, workflowId] of Object.entries(ids)) {
    if (only.length > 0 && !only.includes(type)) continue;
    const file = `test/histories/${type}.json`;
    if (baseline && !replace && existsSync(file)) {
      console.error(`[record] ${file}: kept (the ${version} baseline; --replace overwrites it)`);
      continue;
    }
    const json = execFileSync(
      cli,
      [
        'workflow',
        'show',
        '--address',
        stack.env.TEMPORAL_ADDRESS!,
        '--workflow-id',
        workflowId,
        ...(runIds[type] ? ['--run-id', runIds[type]] : []),
        '--output',
        'json',
      ],
      { encoding: 'utf8' },
    );
    writeFileSync(file, json.endsWith('\n') ? json : `${json}\n`);
    console.error(`[record] ${file}: ${(JSON.parse(json) as { events: unknown[] }).events.length} events`);
    written.push(type);
  }
  // Replay needs each run's workflow id (the workflows check that it is their business key).
  const index = {
    ...(JSON.parse(readFileSync('test/histories/index.json', 'utf8')) as Record<string, string>),
    ...Object.fromEntries(written.map((type) => [type, ids[type]!])),
  };
  writeFileSync('test/histories/index.json', `${JSON.stringify(index, null, 2)}\n`);
} finally {
  await close();
}
