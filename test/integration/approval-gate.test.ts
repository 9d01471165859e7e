import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decideApproval, requestTransferVerdictApproval } from '../../src/client/approvals/approvals.js';
import { startLifecycle } from '../../src/client/tenants/start-lifecycle.js';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { closeStatusQuery } from '../../workflows/close-tenant-messages.js';
import { onboardingStatusQuery } from '../../workflows/onboard-tenant-messages.js';
import {
  clearFaults,
  createOrchestratorEnv,
  setFaults,
  waitForOnboardingStage,
  type OrchestratorEnv,
} from '../harness/onboarding-env.js';
import { waitFor } from '../harness/rotation-env.js';

/**
 * The worker's side of four-eyes (issue 31): with resolveTransfer in the worker's APPROVAL_POLICY a
 * verdict sent straight to the run (a client handle, as the Web UI or `temporal workflow update`
 * send it) acts only with an approval a second operator granted for exactly that run and verdict,
 * unexpired, and only once. A refusal leaves the run waiting, the transfer as it was, and no
 * resolution in the audit log. Without the policy nothing changes.
 */
const FAST = { reconcileInterval: '200ms', balanceRetryInterval: '1h', unknownTransferDeadline: '2s' };
const LOST_TRANSFER = [
  { method: 'POST', path: '/subaccounts/*/wallet/transfers', mode: 'drop-after-commit', count: 1 },
  { method: 'GET', path: '/subaccounts/*/wallet', mode: 'error-before-commit', status: 503, code: 'UNAVAILABLE' },
] as const;
const verdict = (outcome: string, extra: Record<string, unknown> = {}) => ({
  outcome,
  operator: 'alice',
  reason: 'seen on the wallet',
  ...extra,
});

async function refusalOf(handle: WorkflowHandle, arg: unknown): Promise<{ type?: string; why?: string }> {
  const error = await handle.executeUpdate('resolveTransfer', { args: [arg] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `resolveTransfer ${JSON.stringify(arg)} was accepted`).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (error as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  const failure = cause as ApplicationFailure;
  return { type: failure.type ?? undefined, why: (failure.details?.[0] as { why?: string } | undefined)?.why };
}

/** A run that went through the gate (refusals, a used approval) replays against the same code. */
async function expectReplays(handle: WorkflowHandle) {
  // A cancelled run first finishes its last steps: the whole history is replayed, none of it live.
  await handle.result().catch(() => undefined);
  await expect(
    Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      await handle.fetchHistory(),
      handle.workflowId,
    ),
  ).resolves.toBeUndefined();
}

function worldOf(env: OrchestratorEnv) {
  const transfersOf = (externalRef: string) => {
    const subaccount = env.sim.state().subaccounts.find((s) => s.externalRef === externalRef)!;
    return env.sim.state().transfers.filter((t) => t.subaccountId === subaccount.id);
  };
  return {
    transfersOf,
    async driveToNeedsOperator(externalRef: string) {
      await setFaults(env.sim, [...LOST_TRANSFER]);
      const handle = await startOnboarding(
        env.client,
        { externalRef, name: `Tenant ${externalRef}`, fundingMicroUsd: '900', options: FAST },
        { taskQueue: env.taskQueue },
      );
      await waitForOnboardingStage(env, `onboard:${externalRef}`, 'needs_operator');
      await clearFaults(env.sim);
      return handle;
    },
    /** The run still waits, the transfer is as it was, and nothing was resolved. */
    async expectUntouched(externalRef: string, transfers = 1) {
      const status = await env.client.workflow.getHandle(`onboard:${externalRef}`).query(onboardingStatusQuery);
      expect(status.stage).toBe('needs_operator');
      const { rows } = await env.pool.query(`SELECT state FROM transfer_intents WHERE external_ref = $1`, [
        externalRef,
      ]);
      expect(rows).toEqual([{ state: 'needs_operator' }]);
      expect(transfersOf(externalRef)).toHaveLength(transfers);
      expect(await resolutionsOf(env, externalRef)).toEqual([]);
    },
  };
}

async function resolutionsOf(env: OrchestratorEnv, externalRef: string) {
  const { rows } = await env.pool.query(
    `SELECT actor, details FROM audit_log WHERE external_ref = $1 AND action = 'transfer.resolved_by_operator' ORDER BY id`,
    [externalRef],
  );
  return rows as Array<{ actor: string; details: Record<string, unknown> }>;
}

/** An approval row as a past request left it (inserted directly: most states cannot be made on demand). */
async function insertApproval(
  env: OrchestratorEnv,
  row: {
    id: string;
    externalRef: string;
    params: Record<string, unknown>;
    state: 'awaiting_approval' | 'approved' | 'rejected' | 'executed';
    action?: string;
    requestedBy?: string;
    decidedBy?: string | null;
    expiresIn?: string;
  },
) {
  const decidedBy = row.state === 'awaiting_approval' ? null : (row.decidedBy ?? 'bob');
  await env.pool.query(
    `INSERT INTO approval_requests (id, action, external_ref, params, requested_by, reason, state,
                                    decided_by, decision_reason, decided_at, expires_at)
     VALUES ($1, $2, $3, $4::jsonb, $5, 'seen on the wallet', $6, $7::text,
             CASE WHEN $7::text IS NULL THEN NULL ELSE 'checked too' END,
             CASE WHEN $7::text IS NULL THEN NULL ELSE now() END, now() + $8::interval)`,
    [
      row.id,
      row.action ?? 'resolveTransfer',
      row.externalRef,
      JSON.stringify(row.params),
      row.requestedBy ?? 'alice',
      row.state,
      decidedBy,
      row.expiresIn ?? '1 hour',
    ],
  );
}

async function approvalState(env: OrchestratorEnv, id: string) {
  return (await env.pool.query(`SELECT state FROM approval_requests WHERE id = $1`, [id])).rows[0]?.state as string;
}

describe('resolveTransfer gated in the worker (APPROVAL_POLICY=resolveTransfer)', () => {
  let env: OrchestratorEnv;
  let world: ReturnType<typeof worldOf>;
  beforeAll(async () => {
    env = await createOrchestratorEnv(
      'approval-gate',
      { choices: { walletShowsTransfers: false } },
      { approvals: { actions: new Set(['resolveTransfer'] as const) } },
    );
    world = worldOf(env);
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('refuses a verdict sent straight to the run without an approval id', async () => {
    const handle = await world.driveToNeedsOperator('gate-bare');
    expect(await refusalOf(handle, verdict('applied'))).toMatchObject({ type: 'APPROVAL_REQUIRED' });
    await world.expectUntouched('gate-bare');
    await handle.cancel();
    await expectReplays(handle);
  });

  it(
    'refuses an approval that is awaiting, rejected, expired, used, unknown, for another ' +
      'action, run, outcome or operator; none is used up',
    async () => {
      const ref = 'gate-bad';
      const handle = await world.driveToNeedsOperator(ref);
      const params = { workflowId: `onboard:${ref}`, close: false, outcome: 'applied' };
      const cases: Array<{ why: string; row?: Omit<Parameters<typeof insertApproval>[1], 'id' | 'externalRef'> }> = [
        { why: 'not_approved', row: { params, state: 'awaiting_approval' } },
        { why: 'not_approved', row: { params, state: 'rejected' } },
        { why: 'expired', row: { params, state: 'approved', expiresIn: '-1 minute' } },
        { why: 'used', row: { params, state: 'executed' } },
        { why: 'not_found' },
        { why: 'other_action', row: { params: { slot: 'default' }, state: 'approved', action: 'keyReveal' } },
        { why: 'other_run', row: { params: { ...params, workflowId: 'onboard:gate-bare' }, state: 'approved' } },
        {
          why: 'other_run',
          row: { params: { ...params, workflowId: `close:${ref}`, close: true }, state: 'approved' },
        },
        { why: 'other_verdict', row: { params: { ...params, outcome: 'not-applied' }, state: 'approved' } },
        // bob approved alice's request: he cannot send it as his own verdict, nor alice approve her own.
        { why: 'other_operator', row: { params, state: 'approved' } },
      ];
      for (const [index, { why, row }] of cases.entries()) {
        const id = `apr_bad${index}`;
        if (row) await insertApproval(env, { id, externalRef: ref, ...row });
        const operator = why === 'other_operator' ? 'bob' : 'alice';
        const refused = await refusalOf(handle, verdict('applied', { operator, approvalId: id }));
        expect(refused, `case ${index} (${why})`).toEqual({ type: 'APPROVAL_NOT_VALID', why });
        if (row) expect(await approvalState(env, id)).toBe(row.state);
      }
      await world.expectUntouched(ref);
      const executed = await env.pool.query(
        `SELECT 1 FROM audit_log WHERE action = 'approval.executed' AND external_ref = $1`,
        [ref],
      );
      expect(executed.rows).toEqual([]);

      // A self-approval cannot even be written: the database refuses it (migration 0011).
      await expect(
        insertApproval(env, { id: 'apr_self', externalRef: ref, params, state: 'approved', decidedBy: 'alice' }),
      ).rejects.toThrow(/check constraint/);
      await handle.cancel();
    },
  );

  it('acts on a properly approved verdict once; the same approval sent again is refused', async () => {
    const ref = 'gate-once';
    const handle = await world.driveToNeedsOperator(ref);
    await insertApproval(env, {
      id: 'apr_once',
      externalRef: ref,
      params: { workflowId: `onboard:${ref}`, close: false, outcome: 'not-applied' },
      state: 'approved',
    });
    // The resend is lost too, so the run comes back to needs_operator and can be offered the approval again.
    await setFaults(env.sim, [...LOST_TRANSFER]);
    const answer = await handle.executeUpdate('resolveTransfer', {
      args: [verdict('not-applied', { approvalId: 'apr_once' })],
    });
    expect(answer).toMatchObject({ effect: expect.stringMatching(/fresh idempotency key/) });
    expect(await approvalState(env, 'apr_once')).toBe('executed');
    await waitFor(
      async () =>
        (
          await env.pool.query(`SELECT 1 FROM transfer_intents WHERE external_ref = $1 AND state = 'needs_operator'`, [
            ref,
          ])
        ).rowCount && world.transfersOf(ref).length === 2
          ? true
          : undefined,
      'the resent transfer to need an operator again',
    );
    await waitForOnboardingStage(env, `onboard:${ref}`, 'needs_operator');
    await clearFaults(env.sim);

    expect(await refusalOf(handle, verdict('not-applied', { approvalId: 'apr_once' }))).toEqual({
      type: 'APPROVAL_NOT_VALID',
      why: 'used',
    });
    expect(world.transfersOf(ref)).toHaveLength(2);
    expect(await resolutionsOf(env, ref)).toEqual([
      {
        actor: 'operator:alice',
        details: expect.objectContaining({ outcome: 'not-applied', approval: 'apr_once' }),
      },
    ]);
    const { rows } = await env.pool.query(
      `SELECT actor, workflow_id AS "workflowId" FROM audit_log WHERE subject = 'apr_once' AND action = 'approval.executed'`,
    );
    expect(rows).toEqual([{ actor: 'operator:bob', workflowId: `onboard:${ref}` }]);
    await handle.cancel();
    await expectReplays(handle);
  });

  it('the well-behaved path (request, a second operator approves) still works and uses the approval', async () => {
    const ref = 'gate-client';
    const handle = await world.driveToNeedsOperator(ref);
    const deps = { pool: env.pool, client: env.client };
    const request = await requestTransferVerdictApproval(deps, {
      externalRef: ref,
      workflowId: `onboard:${ref}`,
      close: false,
      verdict: { outcome: 'applied', operator: 'alice', reason: 'seen on the wallet' },
      ttlMs: 60_000,
    });
    const decided = await decideApproval(deps, request.id, 'approve', { operator: 'bob', reason: 'checked too' });
    expect(decided.answer).toMatchObject({ transferState: 'succeeded' });
    expect(await handle.result()).toMatchObject({ status: 'active' });
    expect(world.transfersOf(ref)).toHaveLength(1);
    expect(await approvalState(env, request.id)).toBe('executed');
    const { rows } = await env.pool.query(`SELECT action, actor FROM audit_log WHERE subject = $1 ORDER BY id`, [
      request.id,
    ]);
    expect(rows).toEqual([
      { action: 'approval.requested', actor: 'operator:alice' },
      { action: 'approval.approved', actor: 'operator:bob' },
      { action: 'approval.executed', actor: 'operator:bob' },
    ]);
  });

  it("a close's verdict is gated the same way: refused bare, taken with its approval", async () => {
    const ref = 'gate-close';
    await setFaults(env.sim, [...LOST_TRANSFER]);
    await startOnboarding(
      env.client,
      {
        externalRef: ref,
        name: 'Close Gate',
        fundingMicroUsd: '900',
        options: { ...FAST, unknownTransferDeadline: '1h' },
      },
      { taskQueue: env.taskQueue },
    );
    await waitForOnboardingStage(env, `onboard:${ref}`, 'reconciling_transfer');
    const close = await startLifecycle(
      env.client,
      'close',
      {
        externalRef: ref,
        reason: 'customer left',
        operator: 'ops',
        options: { unknownTransferDeadline: '1s', pollInterval: '200ms' },
      },
      { taskQueue: env.taskQueue },
    );
    await waitFor(
      async () => ((await close.query(closeStatusQuery)).stage === 'needs_operator' ? true : undefined),
      'the close to ask an operator',
    );
    await clearFaults(env.sim);
    const purpose = 'initial-funding';
    expect(await refusalOf(close, verdict('applied', { purpose }))).toMatchObject({ type: 'APPROVAL_REQUIRED' });
    const params = { workflowId: `close:${ref}`, close: true, outcome: 'applied' };
    await insertApproval(env, {
      id: 'apr_close_other',
      externalRef: ref,
      params: { ...params, purpose: 'top-up' },
      state: 'approved',
    });
    expect(await refusalOf(close, verdict('applied', { purpose, approvalId: 'apr_close_other' }))).toEqual({
      type: 'APPROVAL_NOT_VALID',
      why: 'other_verdict',
    });
    expect((await close.query(closeStatusQuery)).stage).toBe('needs_operator');
    expect(await resolutionsOf(env, ref)).toEqual([]);

    await insertApproval(env, { id: 'apr_close', externalRef: ref, params: { ...params, purpose }, state: 'approved' });
    const answer = await close.executeUpdate('resolveTransfer', {
      args: [verdict('applied', { purpose, approvalId: 'apr_close' })],
    });
    expect(answer).toMatchObject({ transferState: 'succeeded' });
    expect(await close.result()).toMatchObject({ status: 'closed' });
    expect(await approvalState(env, 'apr_close')).toBe('executed');
    await expectReplays(close);
  });
});

describe('resolveTransfer not gated in the worker (APPROVAL_POLICY=none)', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('approval-gate-off', { choices: { walletShowsTransfers: false } });
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  it('takes a verdict without an approval id as before, and writes nothing about approvals', async () => {
    const world = worldOf(env);
    const handle = await world.driveToNeedsOperator('gate-off');
    const answer = await handle.executeUpdate('resolveTransfer', { args: [verdict('applied')] });
    expect(answer).toMatchObject({ transferState: 'succeeded' });
    expect(await handle.result()).toMatchObject({ status: 'active' });
    expect(world.transfersOf('gate-off')).toHaveLength(1);
    expect(await resolutionsOf(env, 'gate-off')).toEqual([
      { actor: 'operator:alice', details: { outcome: 'applied', reason: 'seen on the wallet' } },
    ]);
    const { rows } = await env.pool.query(`SELECT count(*)::int AS n FROM audit_log WHERE action LIKE 'approval.%'`);
    expect(rows).toEqual([{ n: 0 }]);
  });
});
