import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOW_TYPES } from '../../src/main/wiring/workflow-types.js';
import { runProcess } from '../harness/cli.js';
import { createOrchestratorEnv, type OrchestratorEnv } from '../harness/onboarding-env.js';

/**
 * `npm run replay` before a deploy replays live runs of every workflow type the worker registers (it read a list of
 * nine types, and an autoTopUpSweep, a fundTenant or any key-slot run was never replayed).
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
const s = randomBytes(3).toString('hex');

describe('npm run replay', () => {
  let env: OrchestratorEnv;
  beforeAll(async () => {
    env = await createOrchestratorEnv('replay-script');
    await env.startOrchestratorWorker();
  }, 120_000);
  afterAll(async () => {
    await env?.close();
  });

  it('replays a live run of a type outside the old list, and lists every registered type', async () => {
    const workflowId = `auto-top-up-sweep:replay-${s}`;
    await env.client.workflow.execute('autoTopUpSweep', {
      taskQueue: env.taskQueue,
      workflowId,
      args: [{ pageSize: 10 }],
    });
    const replay = await runProcess(
      process.execPath,
      ['--import', 'tsx', 'scripts/replay.ts', '--limit', '5', '--query', `WorkflowId = "${workflowId}"`],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/root',
          DATA_DIR: '/nonexistent-stack-dir',
          ...env.cliEnv,
        },
        timeoutMs: 120_000,
      },
    );
    expect(replay.code, replay.stderr).toBe(0);
    const rows = replay.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/));
    expect(rows.map(([type]) => type)).toEqual(WORKFLOW_TYPES);
    expect(rows.find(([type]) => type === 'autoTopUpSweep')).toEqual(['autoTopUpSweep', '1', '0']);
    expect(rows.filter(([type]) => type !== 'autoTopUpSweep').every(([, replayed]) => replayed === '0')).toBe(true);
  }, 180_000);
});
