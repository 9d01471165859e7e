import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOnboarding } from '../../src/client/tenants/start-onboarding.js';
import { InvalidInputError } from '../../src/domain/tenant-input.js';
import { runCli } from '../harness/cli.js';
import { failureTypeOf } from '../harness/onboarding-checks.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/** Bad inputs a real signup backend or operator sends; each must name the field and write nothing. */
const BAD_INPUTS: Array<[string, Record<string, unknown>, string]> = [
  ['a missing external ref', { name: 'N' }, 'externalRef'],
  ['an empty external ref', { externalRef: '', name: 'N' }, 'externalRef'],
  ['an over-long external ref', { externalRef: 'x'.repeat(129), name: 'N' }, 'externalRef'],
  ['an accented external ref', { externalRef: 'café', name: 'N' }, 'externalRef'],
  ['an external ref with a space', { externalRef: 'a b', name: 'N' }, 'externalRef'],
  ['a path-like external ref', { externalRef: '../etc', name: 'N' }, 'externalRef'],
  ['an external ref with a NUL', { externalRef: 'a\u0000b', name: 'N' }, 'externalRef'],
  ['a numeric external ref', { externalRef: 42, name: 'N' }, 'externalRef'],
  ['an empty name', { externalRef: 'ok-ref', name: '' }, 'name'],
  ['a null name', { externalRef: 'ok-ref', name: null }, 'name'],
  ['a name with a control character', { externalRef: 'ok-ref', name: 'A\u0007B' }, 'name'],
  ['a zero amount', { externalRef: 'ok-ref', name: 'N', fundingMicroUsd: '0' }, 'fundingMicroUsd'],
  ['a negative amount', { externalRef: 'ok-ref', name: 'N', fundingMicroUsd: '-1' }, 'fundingMicroUsd'],
  ['a fractional amount', { externalRef: 'ok-ref', name: 'N', fundingMicroUsd: '1.5' }, 'fundingMicroUsd'],
  ['an exponent amount', { externalRef: 'ok-ref', name: 'N', fundingMicroUsd: '1e6' }, 'fundingMicroUsd'],
  ['a number amount', { externalRef: 'ok-ref', name: 'N', fundingMicroUsd: 1000000 }, 'fundingMicroUsd'],
  ['an unknown field', { externalRef: 'ok-ref', name: 'N', tier: 'gold' }, 'tier'],
];

describe('bad onboarding input', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('input');
    await env.startOrchestratorWorker();
  });
  afterAll(async () => env?.close());

  async function expectNothingWritten() {
    const { rows } = await env.pool.query(
      `SELECT (SELECT count(*) FROM tenants)::int AS tenants, (SELECT count(*) FROM audit_log)::int AS audit`,
    );
    expect(rows[0]).toEqual({ tenants: 0, audit: 0 });
    expect(env.sim.state().subaccounts).toHaveLength(0);
  }

  it.each(BAD_INPUTS)('the helper refuses %s, naming the field, and starts nothing', async (_label, input, field) => {
    const error = await startOnboarding(env.client, input, { taskQueue: env.taskQueue }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).problems.some((p) => p.startsWith(`${field}:`) || p.includes(field))).toBe(
      true,
    );
    if (typeof input.externalRef === 'string' && /^[A-Za-z0-9]/.test(input.externalRef)) {
      await expect(env.client.workflow.getHandle(`onboard:${input.externalRef}`).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
    }
    await expectNothingWritten();
  });

  it.each(BAD_INPUTS.slice(0, 8).concat(BAD_INPUTS.slice(11, 16)))(
    'a Web-UI start with %s fails with INVALID_INPUT and writes nothing',
    async (_label, input) => {
      const handle = await env.client.workflow.start('onboardTenant', {
        taskQueue: env.taskQueue,
        workflowId: `onboard:ui-${Math.random().toString(36).slice(2)}`,
        args: [input],
      });
      expect(failureTypeOf(await handle.result().catch((e: unknown) => e))).toBe('INVALID_INPUT');
      await expectNothingWritten();
    },
  );

  it('a Web-UI start under another workflow id is refused (the id is the business key)', async () => {
    const handle = await env.client.workflow.start('onboardTenant', {
      taskQueue: env.taskQueue,
      workflowId: 'my-own-id',
      args: [{ externalRef: 'ok-ref', name: 'N' }],
    });
    expect(failureTypeOf(await handle.result().catch((e: unknown) => e))).toBe('INVALID_INPUT');
    await expectNothingWritten();
  });

  it('the CLI prints one line per problem, exits 2 and writes nothing', async () => {
    const result = await runCli(
      ['onboard', '--external-ref', 'café au lait', '--name', ' padded ', '--funding', '1.5'],
      env.cliEnv,
    );
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines.map((l) => l.split(':')[1]!.trim()).sort()).toEqual(['externalRef', 'fundingMicroUsd', 'name']);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    await expectNothingWritten();
  });
});
