import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backUpRecords, restoreRecords } from '../../chaos/records-backup.js';
import { resolveDatabase } from '../../src/infra/database.js';
import {
  DEFAULT_PERSONAL_TOKEN,
  DEFAULT_PLATFORM_KEY,
  startSimulator,
  type RunningSimulator,
} from '../../src/sim/index.js';
import { runProcess, type CliResult } from '../harness/cli.js';
import { startDevStackProcess, type DevStackProcess } from '../harness/dev-stack-process.js';

/**
 * docs/operations.md, "Restoring Postgres from a backup", followed as an operator follows it (issue 48). The dev
 * stack runs against a platform that outlives its restart (a simulator this test holds, given to `npm start` with
 * PLATFORM_BASE_URL as docs/development.md gives it `npm run sim`). Tenants are onboarded, the records backed up,
 * then a tenant onboarded, one topped up, one rotated, one suspended and one closed. The stack is stopped, its
 * Postgres restored from the backup, and the stack started again with the DRIFT_POLICY copied out of the runbook;
 * then each step's commands, copied out of the runbook as written, run in a second terminal that has nothing
 * exported but DATA_DIR (`<ref>` replaced by each tenant's ref). If the runbook and the product drift apart (a
 * renamed flag, a policy kind the worker refuses or that fixes nothing), this fails. The one thing added to a
 * runbook command: seconds for the adoption's durations (quiet period, propagation allowance, poll interval), where
 * an operator waits their hours.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));

interface RunbookStep {
  number: number;
  text: string;
  /** Every `npx tenantctl ...` of the step, in the order written. */
  commands: string[];
}

/** The section's DRIFT_POLICY value and its numbered steps, each with the commands it shows. */
function restoreRunbook(): { driftPolicy: string; steps: RunbookStep[] } {
  const page = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
  const section = /### Restoring Postgres from a backup\n([\s\S]*?)\n### /.exec(page)?.[1];
  if (!section) throw new Error('docs/operations.md: no section "### Restoring Postgres from a backup"');
  const steps = section
    .split(/^(?=\d+\. )/m)
    .slice(1)
    .map((text) => {
      const spans = [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s+/g, ' '));
      const typed = spans.filter((span) => /^(npx )?tenantctl /.test(span));
      // An operator copies the command: one without `npx` does not run from a checkout's terminal.
      for (const span of typed) if (!span.startsWith('npx ')) throw new Error(`runbook: write \`npx ${span}\``);
      return { number: Number(/^\d+/.exec(text)![0]), text, commands: typed };
    });
  const driftPolicy = /`DRIFT_POLICY=([^`]+)`/.exec(steps[0]?.text ?? '')?.[1];
  if (!driftPolicy) throw new Error('runbook step 1: no `DRIFT_POLICY=...`');
  return { driftPolicy, steps };
}

/** A top-up the signup backend asks for after the restore: held until the drift check of step 3, then made. */
const AFTER_RESTORE_TOP_UP =
  'npx tenantctl fund topped --amount 1000 --key after-restore --reason "after the restore" --wait';

/** The adoption's durations in seconds: the quiet gate of the lost key passes while the test waits. */
const ADOPTION_DURATIONS = '--quiet-period 1s --propagation-allowance 1s --poll-interval 1s';

describe('the runbook "Restoring Postgres from a backup", followed as written against the dev stack', () => {
  const runbook = restoreRunbook();
  const ran = new Set<string>();
  let sim: RunningSimulator;
  let stack: DevStackProcess | undefined;
  let dataDir = '';
  /** When the backup was taken, as the operator gives it to `import closed --since`. */
  let backedUpAt = '';
  const made: Record<string, string> = {};

  /** A command line in the operator's terminal: PATH, HOME and DATA_DIR; exit 0 expected. */
  async function shell(line: string): Promise<CliResult> {
    const result = await runProcess('sh', ['-c', line], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', DATA_DIR: dataDir },
      timeoutMs: 180_000,
    });
    expect(result.code, `${line}\n${result.stdout}${result.stderr}`).toBe(0);
    return result;
  }

  /** A command of the runbook's step, found by its verb, run as written with `<ref>` replaced. */
  async function runbookCommand(step: number, verb: string, ref?: string, extra = ''): Promise<string> {
    const command = runbook.steps.find((s) => s.number === step)?.commands.find((c) => c.startsWith(verb));
    expect(command, `runbook step ${step}: no \`${verb}...\``).toBeDefined();
    ran.add(`${step} ${command!}`);
    const typed = command!.replaceAll('<backup time>', backedUpAt);
    const line = ref ? typed.replaceAll('<ref>', ref) : typed;
    expect(line, 'a placeholder left').not.toMatch(/<\w+>/);
    return (await shell(extra ? `${line} ${extra}` : line)).stdout;
  }

  const platform = () => sim.state();
  const subaccountOf = (ref: string) => platform().subaccounts.find((s) => s.externalRef === ref)!;
  const startStack = (settings: Record<string, string> = {}) =>
    startDevStackProcess(600_000, {
      ...(stack ? { dataDir, ports: stack.ports } : {}),
      settings: {
        PLATFORM_BASE_URL: sim.apiBase,
        PLATFORM_API_KEY: DEFAULT_PLATFORM_KEY,
        PLATFORM_PERSONAL_TOKEN: DEFAULT_PERSONAL_TOKEN,
        ...settings,
      },
    });

  beforeAll(async () => {
    sim = await startSimulator({ port: 0 });
    stack = await startStack();
    dataDir = stack.dataDir;
    for (const ref of ['topped', 'rotated', 'suspended', 'closed']) {
      const onboarded = await shell(
        `npx tenantctl onboard --external-ref ${ref} --name "Tenant ${ref}" --funding 5000000 --wait`,
      );
      made[`${ref}Key`] = /key (key_\w+)/.exec(onboarded.stdout)![1]!;
    }

    backedUpAt = new Date().toISOString();
    await backUpRecords(stack.stackEnv.DATABASE_URL!);
    // After the backup: the restore takes all of this out of the records; the platform keeps it.
    const late = await shell('npx tenantctl onboard --external-ref late --name "Late" --funding 1000000 --wait');
    made.lateKey = /key (key_\w+)/.exec(late.stdout)![1]!;
    await shell('npx tenantctl fund topped --amount 250000 --key after-backup --reason "after the backup" --wait');
    const rotated = await shell('npx tenantctl rotate-key rotated --emergency --reason "after the backup" --wait');
    made.rotatedLostKey = /current key (key_\w+)/.exec(rotated.stdout)![1]!;
    await shell('npx tenantctl suspend suspended --reason "after the backup"');
    await shell('npx tenantctl close closed --reason "after the backup"');
    // A whole life after the backup: onboarded (funded), closed. The restore leaves no record; the platform, a 404.
    await shell('npx tenantctl onboard --external-ref brief --name "Brief" --funding 700000 --wait');
    await shell('npx tenantctl close brief --reason "after the backup"');

    // The restore: the workers stopped, the records' database put back to the backup, nothing started on it yet.
    await stack.stop({ keepDataDir: true });
    const database = await resolveDatabase({ DATA_DIR: dataDir });
    try {
      await restoreRecords(database.url);
    } finally {
      await database.stop();
    }
  });

  afterAll(async () => {
    await stack?.stop();
    await sim?.close();
  });

  it('1. starts the workers on the restored records with the DRIFT_POLICY the runbook sets', async () => {
    stack = await startStack({ DRIFT_POLICY: runbook.driftPolicy });
    expect(stack.stackEnv.DRIFT_POLICY).toBe(runbook.driftPolicy);
    // The restore really went back: the records know nothing of the tenant onboarded after the backup.
    expect((await shell('npx tenantctl list')).stdout).not.toMatch(/^late\s/m);
  });

  it('2. lists what waits for a person: nothing, no run was in flight across the restore', async () => {
    expect(runbook.steps[1]!.commands.length).toBeGreaterThan(0);
    for (const command of runbook.steps[1]!.commands) {
      ran.add(`2 ${command}`);
      expect((await shell(command)).stdout.trim(), command).toBe('');
    }
    // New money of the tenant whose top-up the restore lost is held (Temporal shows the run; the records lost it).
    const refused = await runProcess('sh', ['-c', AFTER_RESTORE_TOP_UP], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', DATA_DIR: dataDir },
      timeoutMs: 180_000,
    });
    expect(refused.code, refused.stdout).not.toBe(0);
    expect(refused.stderr).toMatch(
      /records were restored from a backup .*fund:topped:after-backup.*run tenantctl drift check topped/s,
    );
    expect(platform().transfers.filter((t) => t.subaccountId === subaccountOf('topped').id)).toHaveLength(2);
    // And the hold is what now waits for a person, with its way out.
    const attention = (await shell('npx tenantctl list --attention')).stdout;
    expect(attention).toMatch(/^topped\s/m);
    expect(attention).toMatch(
      /attention money-hold:topped \(money_held\): new top-ups held since .*restored from a backup/,
    );
  });

  it('3. checks the fleet twice, records what the platform shows, imports the sub-account no record has', async () => {
    expect(runbook.steps[2]!.text).toMatch(/Run the check twice/);
    const first = await runbookCommand(3, 'npx tenantctl drift check');
    const { subaccounts } = platform();
    const id = (ref: string) => subaccounts.find((s) => s.externalRef === ref)!.id;
    expect(first).toMatch(new RegExp(`fixed subaccount_gone ${id('closed')}: record_closed`));
    expect(first).toMatch(new RegExp(`fixed subaccount_suspended ${id('suspended')}: record_suspended`));
    expect(first).toMatch(/fixed transfer_unrecorded tpo-xfer-\S+: adopt_transfer/);
    expect(first).toMatch(new RegExp(`fixed key_unrecorded ${made.rotatedLostKey}: adopt_key`));
    expect(first).toMatch(new RegExp(`fixed key_revoked_on_platform ${made.rotatedKey}: mark_key_revoked`));
    await runbookCommand(3, 'npx tenantctl drift check');
    const open = await runbookCommand(3, 'npx tenantctl drift list');
    expect(open).toMatch(new RegExp(`^open\\s+subaccount_unrecorded\\s+late\\s+${id('late')}\\s`, 'm'));

    const plan = JSON.parse(await runbookCommand(3, 'npx tenantctl import plan')) as {
      rows: Array<{ subaccountId: string; externalRef: string | null; importable: boolean }>;
    };
    expect(plan.rows).toEqual([
      expect.objectContaining({ subaccountId: id('late'), externalRef: 'late', importable: true }),
    ]);
    expect(await runbookCommand(3, 'npx tenantctl import apply')).toMatch(/^\s*imported\s+late\s/m);

    // The tenant onboarded and closed since the backup: found from its runs, then recorded closed with its funding.
    const closedAgo = await runbookCommand(3, 'npx tenantctl import closed --since <backup time>');
    expect(closedAgo).toMatch(
      new RegExp(`^\\s+record\\s+brief ${subaccountOf('brief').id} .*1 transfer\\(s\\) of 700000`, 'm'),
    );
    const recorded = await runbookCommand(3, 'npx tenantctl import closed --since <backup time> --apply');
    expect(recorded).toMatch(/: 1 recorded, 0 recorded already/);
    expect(recorded).toMatch(/^\s+recorded brief /m);
    // The check recorded the lost top-up: money moves again, counted with it.
    expect((await shell('npx tenantctl list --attention')).stdout).not.toMatch(/money-hold/);
    expect((await shell(AFTER_RESTORE_TOP_UP)).stdout).toMatch(/succeeded/);
  });

  it('4. replaces each key whose secret was lost: unmanaged before the adoption, a new active key after', async () => {
    const keysOf = (ref: string) => runbookCommand(4, 'npx tenantctl key list', ref);
    const unmanaged: Record<string, string[]> = {};
    for (const ref of ['topped', 'rotated', 'suspended', 'closed', 'late']) {
      const lines = (await keysOf(ref)).split('\n').filter((l) => / unmanaged /.test(l));
      if (lines.length) unmanaged[ref] = lines.map((l) => /(key_\w+)/.exec(l)![1]!);
    }
    // The key the rotation made after the backup, and the imported tenant's key: nobody holds their tokens now.
    expect(unmanaged).toEqual({ rotated: [made.rotatedLostKey], late: [made.lateKey] });

    for (const [ref, [lost]] of Object.entries(unmanaged)) {
      await runbookCommand(4, 'npx tenantctl rotate-key', ref, ADOPTION_DURATIONS);
      let keys = '';
      for (let waited = 0; waited < 60_000; waited += 1_000) {
        keys = await keysOf(ref);
        if (new RegExp(`revoked\\s+${lost}`).test(keys) && !/ unmanaged /.test(keys)) break;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      expect(keys, ref).toMatch(new RegExp(`\\brevoked\\s+${lost}\\b`));
      const active = [...keys.matchAll(/\bactive\s+(key_\w+)/g)].map((m) => m[1]);
      expect(active, ref).toHaveLength(1);
      expect(active[0], ref).not.toBe(lost);
      const live = platform().apiKeys.filter((k) => k.subaccountId === subaccountOf(ref).id && k.status === 'active');
      expect(live.map((k) => k.id)).toEqual(active);
    }
  });

  it('5. checks again until `drift list --open` shows nothing the restore explains', async () => {
    let open = '';
    for (let round = 0; round < 3 && open.trim() !== 'no open drift findings'; round++) {
      await runbookCommand(5, 'npx tenantctl drift check');
      open = await runbookCommand(5, 'npx tenantctl drift list');
    }
    expect(open.trim()).toBe('no open drift findings');
  });

  it('ran every command the runbook shows', () => {
    const shown = runbook.steps.flatMap((s) => s.commands.map((c) => `${s.number} ${c}`));
    expect(runbook.steps.map((s) => s.number)).toEqual([1, 2, 3, 4, 5]);
    expect([...new Set(shown)].filter((c) => !ran.has(c))).toEqual([]);
  });

  it('leaves the records as the platform is: every tenant once, in its state, and each transfer once', async () => {
    const list = (await shell('npx tenantctl list')).stdout;
    for (const [ref, status] of Object.entries({
      topped: 'active',
      rotated: 'active',
      suspended: 'suspended',
      closed: 'closed',
      late: 'active',
      brief: 'closed',
    })) {
      const rows = list.split('\n').filter((line) => line.startsWith(`${ref} `));
      expect(rows, ref).toHaveLength(1);
      expect(rows[0], ref).toMatch(new RegExp(`^${ref}\\s+${status}\\s.*\\b${subaccountOf(ref).id}\\b`));
    }
    // Every live sub-account on the platform has its one record: nothing left to import.
    expect(JSON.parse((await shell('npx tenantctl import plan --json')).stdout)).toMatchObject({ rows: [] });
    const transfersTo = (ref: string) => platform().transfers.filter((t) => t.subaccountId === subaccountOf(ref).id);
    expect(transfersTo('topped').map((t) => t.amountMicroUsd)).toEqual(['5000000', '250000', '1000']);
    expect(transfersTo('late').map((t) => t.amountMicroUsd)).toEqual(['1000000']);
    expect(transfersTo('brief').map((t) => t.amountMicroUsd)).toEqual(['700000']);
    expect((await shell('npx tenantctl transfers brief')).stdout).toMatch(/succeeded in total: 700000 micro-USD/);
    const ledger = (await shell('npx tenantctl transfers topped')).stdout;
    expect(ledger.match(/\b250000 micro-USD\s+succeeded/g)).toHaveLength(1);
    expect(ledger).toMatch(/succeeded in total: 5251000 micro-USD/);
    for (const ref of ['topped', 'late'])
      expect((await shell(`npx tenantctl wallet ${ref}`)).stdout).toMatch(
        /difference \(wallet − ledger\): 0 micro-USD/,
      );
    // The signup backend sends the top-up again under its key: it is answered from the record (its run ended before
    // the restore, so the transfer drift recorded again becomes this key's), and nothing moves.
    const replay = await shell(
      'npx tenantctl fund topped --amount 250000 --key after-backup --reason "after the backup" --wait',
    );
    expect(replay.stdout).not.toMatch(/already running/);
    expect(replay.stdout).toMatch(/succeeded/);
    expect(transfersTo('topped')).toHaveLength(3);
  });
});
