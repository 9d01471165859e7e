import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKeyIssue } from '../../src/client/keys/key-slots.js';
import type { SlotKeyView } from '../../src/client/keys/key-slots.js';
import type { LastRun } from '../../src/client/tenants/last-runs.js';
import { runCli, TENANTCTL } from '../harness/cli.js';
import { createRotationEnv, keysOf, waitFor, type RotationEnv } from '../harness/rotation-env.js';

/**
 * Issue 35, finding 1, as users meet it: a slot's key issue waiting at the platform's active-key limit is
 * shown on every surface (the --wait command's stderr, status over the CLI and HTTP, key list over the CLI
 * and HTTP, the run's TenantStatus search attribute, the Web UI's current details), and the operator ends it
 * with the `tenantctl decide` its wait names, after revoking an unused key. Every tenantctl here is a child process.
 */

/** A tenantctl child process whose output can be read while it runs. */
function startCli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [TENANTCTL, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      DATA_DIR: '/nonexistent-stack-dir',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const timer = setTimeout(() => child.kill('SIGKILL'), 110_000);
  void exited.then(() => clearTimeout(timer));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Waits until the process's stderr has a line matching `pattern`; the output is in the error when it never does. */
async function stderrLine(proc: ReturnType<typeof startCli>, pattern: RegExp, timeoutMs = 90_000): Promise<void> {
  await waitFor(async () => (pattern.test(proc.stderr()) ? true : undefined), String(pattern), timeoutMs).catch(
    (error: Error) => {
      throw new Error(
        `${error.message}; exit ${proc.child.exitCode}, stderr: ${proc.stderr()}, stdout: ${proc.stdout()}`,
      );
    },
  );
}

const lines = (text: string, pattern: RegExp) => text.split('\n').filter((line) => pattern.test(line));

describe('a key issue waiting at the active-key limit, as an operator sees and decides it', () => {
  let env: RotationEnv;
  beforeAll(async () => {
    env = await createRotationEnv('key-limit-wait');
  });
  afterAll(async () => env?.close());

  /** The running gateway, as a signup backend or a dashboard calls it. */
  async function http<T>(path: string): Promise<T> {
    const response = await fetch(`${env.cliEnv.TENANTCTL_GATEWAY_URL}${path}`, {
      headers: { authorization: `Bearer ${env.cliEnv.TENANTCTL_OPERATOR_TOKEN}` },
    });
    expect(response.status, path).toBe(200);
    return ((await response.json()) as { data: T }).data;
  }

  it('shows the wait on every surface, and the issue completes after a revoke and retry-key-create', async () => {
    const ref = 'limit-wait';
    const { subaccountId } = await env.onboard(ref);
    for (const slot of ['a', 'b'])
      await (await startKeyIssue({ client: env.client, pool: env.pool }, { externalRef: ref, slot }, env)).result();
    // default, a, b: the simulator's limit of 3 active keys per tenant.
    expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(3);

    const issue = startCli(['key', 'issue', ref, '--slot', 'c', '--wait', '--key-limit-retry', '1h'], env.cliEnv);
    try {
      // --wait: one line on stderr when the wait starts, naming the stage, the keys, the command and the decisions.
      await stderrLine(issue, /waiting \(key_limit\)/);
      const [waitLine] = lines(issue.stderr(), /^waiting \(key_limit\)/);
      expect(waitLine).toMatch(/the platform's active-key limit \(3 active keys: /);
      expect(waitLine).toContain(`tenantctl decide key:${ref}:c retry-key-create --reason <why>`);
      expect(waitLine).toMatch(/— decisions: retryKeyCreate, abortKeyIssue$/);
      expect(issue.stdout()).toBe('');

      // tenantctl status and GET /v1/tenants/:ref: the issue-key run of slot c, running, with its wait.
      const status = await runCli(['status', ref], env.cliEnv);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^last issue-key c: RUNNING \[key:limit-wait:c\]/m);
      expect(status.stdout).toMatch(/^ {2}waiting \(key_limit\) since \S+: the platform's active-key limit/m);
      const view = await http<{ lastRuns: LastRun[] }>(`/v1/tenants/${ref}`);
      const run = view.lastRuns.find((r) => r.kind === 'issue-key' && r.slot === 'c');
      expect(run).toMatchObject({ status: 'RUNNING', waiting: { stage: 'key_limit' } });
      expect(run?.waiting?.decisions).toEqual(['retryKeyCreate', 'abortKeyIssue']);

      // key list and GET /v1/tenants/:ref/keys: the slot is not just `creating`, it says what it waits for.
      const listed = await runCli(['key', 'list', ref], env.cliEnv);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(/^c +g1 creating/m);
      expect(listed.stdout).toMatch(
        /^ {2}issue waiting \(key_limit\) since \S+: .*decisions: retryKeyCreate, abortKeyIssue$/m,
      );
      const { keys } = await http<{ keys: SlotKeyView[] }>(`/v1/tenants/${ref}/keys`);
      const slotC = keys.find((k) => k.slot === 'c');
      expect(slotC).toMatchObject({
        status: 'creating',
        waiting: { action: 'issue', workflowId: `key:${ref}:c`, stage: 'key_limit' },
      });
      expect(slotC?.waiting?.since).toBe(run?.waiting?.since);
      expect(keys.filter((k) => k.slot !== 'c').every((k) => k.waiting === null)).toBe(true);

      // The run's TenantStatus search attribute, through a visibility query as the Web UI's filter runs it.
      await waitFor(async () => {
        for await (const found of env.client.workflow.list({
          query: `WorkflowId = 'key:${ref}:c' AND TenantStatus = 'key_issue:key_limit' AND ExecutionStatus = 'Running'`,
        }))
          return found;
        return undefined;
      }, 'the visibility query to find the run by TenantStatus');
      // The Web UI's current details: the metadata query it reads.
      const handle = env.client.workflow.getHandle(`key:${ref}:c`);
      const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toMatch(/\*\*waiting\*\* \(key_limit\): the platform's active-key limit/);
      expect(metadata.currentDetails).toMatch(/decisions that apply: retryKeyCreate, abortKeyIssue/);

      // Decisions that cannot apply: refused, naming why, nonzero exit, nothing sent to the run.
      const noReason = await runCli(
        ['key', 'decide', ref, 'retry-key-create', '--slot', 'c', '--reason', ' '],
        env.cliEnv,
      );
      expect(noReason.code).toBe(2);
      expect(noReason.stderr).toMatch(/reason/);
      const badWord = await runCli(['key', 'decide', ref, 'retry', '--slot', 'c', '--reason', 'x'], env.cliEnv);
      expect(badWord.code).toBe(2);
      expect(badWord.stderr).toMatch(/decision: must be one of retry-key-create, abort/);
      const nothingWaits = await runCli(
        ['key', 'decide', ref, 'retry-key-create', '--slot', 'a', '--reason', 'wrong slot'],
        env.cliEnv,
      );
      expect(nothingWaits.code).toBe(1);
      expect(nothingWaits.stderr).toMatch(/key:limit-wait:a.*nothing is waiting for retryKeyCreate/);

      // The operator revokes an unused key (through the quiet gate: its own wait shows the same way).
      const revoke = startCli(
        [
          'key',
          'revoke',
          ref,
          '--slot',
          'a',
          '--quiet-period',
          '4s',
          '--poll-interval',
          '250ms',
          '--overlap-window',
          '1s',
        ],
        env.cliEnv,
      );
      await stderrLine(revoke, /waiting \(waiting_for_quiet\)/);
      const during = await http<{ keys: SlotKeyView[] }>(`/v1/tenants/${ref}/keys?slot=a`);
      expect(during.keys[0]).toMatchObject({
        status: 'active',
        waiting: { action: 'revoke', stage: 'waiting_for_quiet' },
      });
      expect((await env.client.workflow.getHandle(`key-revoke:${ref}:a`).describe()).searchAttributes).toMatchObject({
        TenantStatus: ['key_revoke:waiting_for_quiet'],
      });
      expect(await revoke.exited, revoke.stderr()).toBe(0);
      expect(revoke.stdout()).toMatch(/^key a \S+: revoked — no use for/);
      expect(lines(revoke.stderr(), /^wait over \(waiting_for_quiet\)/)).toHaveLength(1);

      // Still waiting until told: the retry is the operator's decision (the timer is an hour).
      expect(issue.child.exitCode).toBeNull();
      // The command the wait line names, as an operator copies it.
      const decided = await runCli(
        ['decide', `key:${ref}:c`, 'retry-key-create', '--reason', 'revoked the unused key a'],
        env.cliEnv,
      );
      expect(decided.code, decided.stderr).toBe(0);
      expect(decided.stdout.trim()).toBe(
        `retry-key-create accepted by key:${ref}:c (now key_limit): the key create is tried again now`,
      );

      expect(await issue.exited, issue.stderr()).toBe(0);
      expect(issue.stdout()).toMatch(/^key c g1 issued: \S+ \(\S+\)$/m);
      expect(lines(issue.stderr(), /^waiting \(/)).toHaveLength(1);
      expect(lines(issue.stderr(), /^wait over \(key_limit\), waited since \S+$/)).toHaveLength(1);
      const after = await http<{ keys: SlotKeyView[] }>(`/v1/tenants/${ref}/keys?slot=c`);
      expect(after.keys).toMatchObject([{ status: 'active', verified: true, waiting: null }]);
      expect((await handle.describe()).searchAttributes).toMatchObject({ TenantStatus: ['key_issue:issued'] });
      expect(keysOf(env, subaccountId).filter((k) => k.status === 'active')).toHaveLength(3);
    } finally {
      if (issue.child.exitCode === null) issue.child.kill('SIGKILL');
    }
  });
});
