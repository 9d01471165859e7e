/**
 * The exit codes of every waiting command: docs/exit-codes.md's one table says what the code does
 * (EXIT_CODES, REFUSALS in src/cli/poll-run.ts), and the refusals are words of the workflows' own
 * result types. The `--timeout` poll and the refusal reading, without a server.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  EXIT_CODES,
  REFUSALS,
  completedResult,
  pollUntil,
  refusalOf,
  setWaitDeadline,
  standingLines,
  StillWaitingError,
} from '../../src/cli/poll-run.js';
import type { FundTenantResult } from '../../workflows/fund-tenant-messages.js';
import type { RevokeTenantKeySlotResult } from '../../workflows/keys/revoke-tenant-key.js';
import type { RotateTenantKeyResult } from '../../workflows/keys/rotate-tenant-key-messages.js';
import type { AdoptTenantKeysResult } from '../../src/domain/import-input.js';
import type { CloseTenantResult } from '../../workflows/close-tenant-messages.js';
import type { ConvergeTenantPlanResult } from '../../workflows/plan-rollout-messages.js';

const table = readFileSync(new URL('../../docs/exit-codes.md', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => /^\| \d+ \|/.test(line))
  .map((line) => {
    const [code, meaning, when] = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    return { code: Number(code), meaning: meaning!, when: when! };
  });

describe('docs/exit-codes.md', () => {
  it('has one row per exit code, with the code’s own name and value', () => {
    expect(table.map((row) => [row.meaning.replace(/ /g, '').toLowerCase(), row.code])).toEqual(
      Object.entries(EXIT_CODES).map(([name, code]) => [name.toLowerCase(), code]),
    );
  });

  it('names every refusal the code reads, in the row of exit 3, and no other', () => {
    const refused = table.find((row) => row.code === EXIT_CODES.refused)!;
    const named = [...refused.when.matchAll(/`(\w+): (\w+)`/g)].map((m) => `${m[1]}: ${m[2]}`);
    expect(named).toEqual(REFUSALS.map((r) => `${r.field}: ${r.value}`));
  });

  it('the refusals are words of the workflows’ result types', () => {
    // A word renamed in a result type breaks this file's typecheck.
    const words = {
      'state: cap_refused': 'cap_refused' satisfies FundTenantResult['state'],
      'state: skipped': 'skipped' satisfies FundTenantResult['state'],
      'outcome: refused': 'refused' satisfies RevokeTenantKeySlotResult['outcome'],
      'outcome: aborted': 'aborted' satisfies RotateTenantKeyResult['outcome'] & AdoptTenantKeysResult['outcome'],
      'outcome: held': 'held' satisfies ConvergeTenantPlanResult['outcome'],
      'outcome: skipped': 'skipped' satisfies ConvergeTenantPlanResult['outcome'],
      'status: close_cancelled': 'close_cancelled' satisfies CloseTenantResult['status'],
    };
    expect(REFUSALS.map((r) => `${r.field}: ${r.value}`).sort()).toEqual(Object.keys(words).sort());
  });
});

describe('refusals and completed runs', () => {
  afterEach(() => {
    process.exitCode = undefined;
  });
  const run = (result: unknown, status = 'COMPLETED') => ({
    workflowId: 'fund:acme:k1',
    status,
    result,
    failure: status === 'COMPLETED' ? null : { message: 'boom', type: 'X', causes: [] },
    waiting: null,
  });

  it('a completed refusal is exit 3 and still gives its result; a completed success leaves the code', () => {
    const refused = { state: 'cap_refused', refusedBy: 'tenant_per_day' };
    expect(refusalOf(refused)).toMatch(/^state cap_refused: a spend cap/);
    expect(completedResult(run(refused))).toEqual(refused);
    expect(process.exitCode).toBe(3);
    process.exitCode = undefined;
    expect(completedResult(run({ state: 'succeeded' }))).toEqual({ state: 'succeeded' });
    expect(process.exitCode).toBeUndefined();
    expect(refusalOf({ outcome: 'completed' })).toBeNull();
    expect(refusalOf(null)).toBeNull();
  });

  it('a run that did not complete is an error naming why', () => {
    expect(() => completedResult(run(null, 'FAILED'))).toThrow('fund:acme:k1 ended FAILED: X: boom');
  });
});

describe('--timeout', () => {
  afterEach(() => setWaitDeadline(undefined, undefined));

  it('looks a last time at the deadline, then says where the run stands; without one it polls on', async () => {
    setWaitDeadline('50ms', 50);
    let looks = 0;
    const standing = [
      {
        workflowId: 'fund:acme:k1',
        status: 'RUNNING',
        waiting: {
          stage: 'waiting_for_parent_funds',
          waitingFor: "the parent's balance",
          since: '2026-01-01T00:00:00.000Z',
          decisions: ['parentFunded'],
          nextCheckAt: null,
        },
      },
    ];
    const error = await pollUntil(
      async () => {
        looks += 1;
        return undefined;
      },
      10,
      () => standing as never,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StillWaitingError);
    expect(looks).toBeGreaterThan(1);
    expect((error as StillWaitingError).runs).toEqual(standing);
    expect(standingLines(error as StillWaitingError)).toEqual([
      'still waiting after --timeout 50ms (nothing was cancelled: the run goes on)',
      "fund:acme:k1: RUNNING, waiting (waiting_for_parent_funds) since 2026-01-01T00:00:00.000Z: the parent's balance; decisions: parentFunded",
    ]);

    setWaitDeadline(undefined, undefined);
    let tries = 0;
    expect(await pollUntil(async () => (++tries === 3 ? 'done' : undefined), 1)).toBe('done');
  });

  it('0 looks once', async () => {
    setWaitDeadline('0', 0);
    let looks = 0;
    await expect(pollUntil(async () => void (looks += 1), 1000)).rejects.toBeInstanceOf(StillWaitingError);
    expect(looks).toBe(1);
  });
});
