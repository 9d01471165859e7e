import type { Command } from 'commander';
import type {
  AssignStart,
  ConvergenceView,
  RolloutPreview,
  RolloutStart,
  RolloutView,
} from '../../client/plans/plan-rollout.js';
import type { PlanSummary, PlanView } from '../../client/plans/plans.js';
import type { DecisionAnswer } from '../../domain/operator-decisions.js';
import type { PlanRef } from '../../domain/plan-ref.js';
import type { PlanChanges } from '../../domain/plan-rollout.js';
import type {
  ConvergeTenantPlanResult,
  RolloutResult,
  RolloutStatus,
} from '../../../workflows/plan-rollout-messages.js';
import type { GatewayClient } from '../../api-client/gateway-client.js';
import { segment, withGateway } from '../run.js';
import { printErrorLine, printJson, printLine } from '../output.js';
import { inFlags } from './top-ups.js';

// Every command here is a client of the gateway's /v1 API: the server validates, writes and audits.

/** `--version` and `--expect-version` as the gateway reads them: a number when it is one, else the text. */
function versionValue(value: string): number | string {
  return /^[1-9][0-9]{0,9}$/.test(value) ? Number(value) : value;
}

/**
 * A count flag (`--concurrency`, `--page-size`) as JSON: a number when it is one, else the text (the server names it).
 */
function countValue(value: string): number | string {
  return /^-?[0-9]{1,10}$/.test(value) ? Number(value) : value;
}

/**
 * `plans rollout`'s flag for each field of `POST /v1/plans/:name/rollouts` (rolloutStartBodySchema in
 * src/domain/plan-rollout.ts), by the field's path in the body: the flag is the kebab-case of its last segment, the
 * value is sent there as the route reads it, and the route's refusal of the field is said in the flag. The server
 * validates by the one schema; test/unit/plan-rollout-cli.test.ts checks every field of the route has its row here
 * and every row a field, so the command and the route cannot drift. `dryRun`: the dry run reads it too.
 */
export const ROLLOUT_START_FLAGS: ReadonlyArray<{
  field: string;
  flag: string;
  help: string;
  value?: (text: string) => unknown;
  dryRun?: true;
}> = [
  {
    field: 'version',
    flag: '--version <n>',
    help: 'this version (default: the latest)',
    value: versionValue,
    dryRun: true,
  },
  {
    field: 'from',
    flag: '--from <plan>',
    help: "move this plan's tenants onto the version (default: the plan's own)",
    dryRun: true,
  },
  {
    field: 'concurrency',
    flag: '--concurrency <n>',
    help: "tenants converging at once (absent: the rollout's default, docs/plans.md)",
    value: countValue,
  },
  {
    field: 'pageSize',
    flag: '--page-size <n>',
    help: "tenants read per page (absent: the rollout's default)",
    value: countValue,
  },
  { field: 'reason', flag: '--reason <text>', help: 'why (audited)' },
  {
    field: 'options.quietPeriod',
    flag: '--quiet-period <duration>',
    help: 'the quiet gate of a slot the version retires: its key shows no new use this long before it is revoked',
  },
  {
    field: 'options.pollInterval',
    flag: '--poll-interval <duration>',
    help: "how often a retired slot's key record is read while the quiet gate waits",
  },
  {
    field: 'options.quietDeadline',
    flag: '--quiet-deadline <duration>',
    help: "a retired slot's key still in use after this long: its revoke is refused and the tenant held",
  },
  {
    field: 'options.overlapWindow',
    flag: '--overlap-window <duration>',
    help: 'where the platform shows no last use of a retired key: wait this long, then revoke it',
  },
];

/** `--quiet-period <duration>` → `--quiet-period`. */
const flagName = (flag: string) => flag.split(' ')[0]!;
/** `--quiet-period` → `quietPeriod`, the option's name as commander reads it. */
const optionKey = (flag: string) =>
  flagName(flag)
    .slice(2)
    .replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());

/** The start's body from the command line's flags: each given flag's value at its field's path. */
export function rolloutStartBody(opts: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const { field, flag, value } of ROLLOUT_START_FLAGS) {
    const given = opts[optionKey(flag)];
    if (typeof given !== 'string') continue;
    const path = field.split('.');
    let at = body;
    for (const segment of path.slice(0, -1)) at = (at[segment] ??= {}) as Record<string, unknown>;
    at[path[path.length - 1]!] = value ? value(given) : given;
  }
  return body;
}

/** `tenantctl plans ...`: plans as versioned records (docs/plans.md). A refused field is said in its flag. */
export const FLAG_OF: Record<string, string> = {
  expectVersion: '--expect-version',
  ...Object.fromEntries(ROLLOUT_START_FLAGS.map(({ field, flag }) => [field, flagName(flag)])),
};

/** An input problem of the command line itself: one line, exit 2, nothing sent. */
class PlanUsageError extends Error {
  override name = 'PlanUsageError';
  readonly problems: string[];
  constructor(problem: string) {
    super(problem);
    this.problems = [problem];
  }
}

/** The plan body from `--file` or `--json` (exactly one of them), as a JSON object. */
async function bodyOf(opts: { file?: string; json?: string }): Promise<Record<string, unknown>> {
  if ((opts.file === undefined) === (opts.json === undefined))
    throw new PlanUsageError('--file or --json: give exactly one of them (the plan as a JSON object)');
  const flag = opts.file !== undefined ? '--file' : '--json';
  let text = opts.json ?? '';
  if (opts.file !== undefined) {
    const { readFile } = await import('node:fs/promises');
    try {
      text = await readFile(opts.file, 'utf8');
    } catch (error) {
      throw new PlanUsageError(
        `--file: cannot read ${opts.file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new PlanUsageError(`${flag}: is not valid JSON`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new PlanUsageError(`${flag}: must be a JSON object (the plan)`);
  return body as Record<string, unknown>;
}

function printPlan(view: PlanView): void {
  const latest = view.version === view.latestVersion ? 'latest' : `latest is ${view.latestVersion}`;
  printLine(`plan ${view.name} version ${view.version} (${latest}), made ${view.createdAt} by ${view.createdBy}`);
  if (view.reason) printLine(`reason: ${view.reason}`);
  printJson(view.plan);
}

const planLabel = (plan: PlanRef | null) => (plan ? `${plan.name}@${plan.version}` : 'no plan');

/** What converging one tenant changes, in one line (`no change` when nothing but perhaps the version). */
export function changesLine(changes: PlanChanges): string {
  const parts = [
    changes.slotsRetired.length ? `retire slots ${changes.slotsRetired.join(', ')} (quiet gate)` : '',
    changes.slotsAdded.length ? `add slots ${changes.slotsAdded.join(', ')}` : '',
    changes.fundingMicroUsd !== null ? `fund ${changes.fundingMicroUsd} micro-USD` : '',
    changes.schedulesSet.length ? `set rotation schedules ${changes.schedulesSet.join(', ')}` : '',
    changes.schedulesRemoved.length ? `remove rotation schedules ${changes.schedulesRemoved.join(', ')}` : '',
    changes.policy !== 'unchanged' ? `auto top-up policy ${changes.policy}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'no change (the version is recorded)';
}

/** `name@version` of a rollout (the version is required: a rollout is of one version). */
async function rolloutArg(spec: string): Promise<PlanRef> {
  const { planSpecOf, PLAN_SPEC_RULE } = await import('../../domain/plan-ref.js');
  const parsed = planSpecOf(spec);
  if (!parsed || parsed.version === undefined)
    throw new PlanUsageError(`rollout: must be a plan and its version, name@version (${PLAN_SPEC_RULE})`);
  return { name: parsed.name, version: parsed.version };
}

const rolloutPath = (plan: PlanRef) => `/v1/plans/${segment(plan.name, 'name')}/rollouts/${plan.version}`;

function totalsLine(status: Pick<RolloutStatus, 'plan' | 'from' | 'totals'>): string {
  const t = status.totals;
  return (
    `${t.started} started, ${t.converged} converged, ${t.unchanged} unchanged, ${t.held} held, ` +
    `${t.skipped} skipped, ${t.failed} failed`
  );
}

/** A rollout's view as lines: where it stands, its totals, its pause, held and failed tenants. */
function rolloutLines(view: RolloutView): string[] {
  const status = view.status;
  if (!status) return [`rollout ${view.workflowId}: ${view.runStatus}${view.error ? `: ${view.error}` : ''}`];
  const running = 'running' in status ? `; ${status.running} running (concurrency ${status.concurrency})` : '';
  const lines = [
    `rollout of plan ${planLabel(status.plan)} to the tenants of ${status.from}: ${view.runStatus}, stage ` +
      `${status.stage}`,
    `  ${totalsLine(status)}${running}`,
  ];
  if ('paused' in status && status.paused)
    lines.push(`  paused by ${status.paused.by} since ${status.paused.since}: ${status.paused.reason}`);
  if (view.waiting) {
    const decide = view.waiting.decisions.length ? `; decisions: ${view.waiting.decisions.join(', ')}` : '';
    lines.push(`  waiting (${view.waiting.stage}) since ${view.waiting.since}: ${view.waiting.waitingFor}${decide}`);
  }
  for (const held of status.held) lines.push(`  held ${held.externalRef}: ${held.reason}`);
  for (const failed of status.failed) lines.push(`  failed ${failed.externalRef}: ${failed.reason}`);
  return lines;
}

/**
 * `plans rollout --wait`: polls the rollout until its run ends, a line on stderr when a wait (a pause) starts
 * and ends and a progress line when the totals moved (at most every 10 s). Exit: 0 every tenant converged or
 * was unchanged; 3 finished with tenants held or skipped (not on the version, nothing failed); 1 a tenant
 * failed or the run did not complete; 4 `--timeout` (docs/exit-codes.md).
 */
async function followRollout(gateway: GatewayClient, plan: PlanRef): Promise<RolloutView> {
  const { hasEnded, pollUntil, standingOf, waitReporter } = await import('../poll-run.js');
  const report = waitReporter();
  let last: RolloutView | null = null;
  let shown = '';
  let shownAt = 0;
  return pollUntil(
    async () => {
      const view = await gateway.get<RolloutView>(rolloutPath(plan));
      last = view;
      report(view.waiting);
      const progress = view.status ? totalsLine(view.status) : '';
      if (view.runStatus === 'RUNNING' && progress && progress !== shown && Date.now() - shownAt >= 10_000) {
        printErrorLine(`progress: ${progress}`);
        shown = progress;
        shownAt = Date.now();
      }
      return hasEnded({ status: view.runStatus }) ? view : undefined;
    },
    500,
    () => (last ? [standingOf({ workflowId: last.workflowId, status: last.runStatus, waiting: last.waiting })] : []),
  );
}

/** The exit code of an ended rollout (set on process.exitCode; printing is the caller's). */
async function rolloutExit(view: RolloutView): Promise<void> {
  const { EXIT_CODES, markRefused } = await import('../poll-run.js');
  if (view.runStatus !== 'COMPLETED')
    throw new Error(`${view.workflowId} ended ${view.runStatus}${view.error ? `: ${view.error}` : ''}`);
  const { totals } = view.status as RolloutResult;
  if (totals.failed > 0) process.exitCode = EXIT_CODES.failed;
  else if (totals.held > 0 || totals.skipped > 0) markRefused();
}

export function registerPlanCommands(program: Command): void {
  const plans = program
    .command('plans')
    .description('plans: what a tenant on a plan gets, as immutable versions (create, update, show, list)');
  const planPath = (name: string) => `/v1/plans/${segment(name, 'name')}`;

  plans
    .command('create')
    .description('make version 1 of a new plan (needs plans.manage; who made it is your token)')
    .argument('<name>')
    .option('--file <path>', 'the plan as a JSON file')
    .option('--json <plan>', 'the plan as JSON text')
    .option('--reason <text>', 'why (audited)')
    .option('--print-json', 'print the version made as JSON')
    .action(async (name: string, opts: { file?: string; json?: string; reason?: string; printJson?: boolean }) =>
      withGateway(async (gateway) => {
        const body = { ...(await bodyOf(opts)), name, ...(opts.reason !== undefined ? { reason: opts.reason } : {}) };
        const { data: view } = await inFlags(gateway.call<PlanView>('POST', '/v1/plans', { body }), FLAG_OF);
        if (opts.printJson) printJson(view);
        else printLine(`created plan ${view.name} version ${view.version}`);
      }),
    );

  plans
    .command('update')
    .description('make the next version of a plan with the whole new body (versions are never changed)')
    .argument('<name>')
    .option('--file <path>', 'the plan as a JSON file')
    .option('--json <plan>', 'the plan as JSON text')
    .option('--expect-version <n>', 'refuse unless the latest version is this one')
    .option('--reason <text>', 'why (audited)')
    .option('--print-json', 'print the version made as JSON')
    .action(
      async (
        name: string,
        opts: { file?: string; json?: string; expectVersion?: string; reason?: string; printJson?: boolean },
      ) =>
        withGateway(async (gateway) => {
          const body = {
            ...(await bodyOf(opts)),
            ...(opts.expectVersion !== undefined ? { expectVersion: versionValue(opts.expectVersion) } : {}),
            ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
          };
          const { data: view } = await inFlags(
            gateway.call<PlanView>('POST', `${planPath(name)}/versions`, { body }),
            FLAG_OF,
          );
          if (opts.printJson) printJson(view);
          else printLine(`updated plan ${view.name}: version ${view.version}`);
        }),
    );

  plans
    .command('show')
    .argument('<name>')
    .option('--version <n>', 'this version (default: the latest)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { version?: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        const { data: view } = await inFlags(
          gateway.call<PlanView>('GET', planPath(name), {
            ...(opts.version !== undefined ? { query: { version: opts.version } } : {}),
          }),
          FLAG_OF,
        );
        if (opts.json) printJson(view);
        else printPlan(view);
      }),
    );

  const rollout = plans
    .command('rollout')
    .description(
      "roll a plan version out to the plan's tenants (or --from another plan's): a paced run, one convergence " +
        'per tenant; --dry-run lists what would change per tenant and does nothing, refused wherever the start ' +
        'would be (needs plans.manage; --dry-run: tenants.read)',
    )
    .argument('<name>');
  for (const { flag, help } of ROLLOUT_START_FLAGS) rollout.option(flag, help);
  rollout
    .option('--dry-run', 'list what would change per tenant, do nothing')
    .option('--wait', 'follow the rollout to its end (exit 0: all converged, 3: some held or skipped, 1: failed)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: Record<string, unknown>) =>
      withGateway(async (gateway) => {
        const json = opts['json'] === true;
        if (opts['dryRun'] === true) {
          const startOnly = ROLLOUT_START_FLAGS.filter((row) => !row.dryRun).map(({ flag }) => flagName(flag));
          for (const flag of ['--wait', ...startOnly])
            if (opts[optionKey(flag)] !== undefined)
              throw new PlanUsageError(`${flag}: not with --dry-run (nothing is started)`);
          const text = (key: string) => (typeof opts[key] === 'string' ? (opts[key] as string) : undefined);
          return dryRun(gateway, name, { version: text('version'), from: text('from'), json });
        }
        const body = rolloutStartBody(opts);
        const { data: start } = await inFlags(
          gateway.call<RolloutStart>('POST', `${planPath(name)}/rollouts`, { body }),
          FLAG_OF,
        );
        const label = planLabel(start.plan);
        if (opts['wait'] !== true) {
          if (json) return printJson(start);
          printLine(
            `${start.started ? 'started' : 'joined the running'} rollout ${start.workflowId} of plan ${label} ` +
              `to the tenants of ${start.from}; follow it: tenantctl plans rollout-status ${label}`,
          );
          return;
        }
        if (!json) printErrorLine(`${start.started ? 'started' : 'joined'} rollout ${start.workflowId}`);
        const view = await followRollout(gateway, start.plan);
        if (json) printJson(view);
        else for (const line of rolloutLines(view)) printLine(line);
        await rolloutExit(view);
      }),
    );

  async function dryRun(
    gateway: GatewayClient,
    name: string,
    opts: { version?: string | undefined; from?: string | undefined; json?: boolean | undefined },
  ): Promise<void> {
    const tenants: RolloutPreview['tenants'] = [];
    let page: RolloutPreview | undefined;
    let after: string | undefined;
    do {
      page = await inFlags(
        gateway.get<RolloutPreview>(`${planPath(name)}/rollout-preview`, {
          version: opts.version,
          from: opts.from,
          after,
          limit: 500,
        }),
        FLAG_OF,
      );
      tenants.push(...page.tenants);
      after = page.next ?? undefined;
    } while (page.next !== null);
    if (opts.json) return printJson({ plan: page.plan, from: page.from, tenants, next: null });
    const label = planLabel(page.plan);
    for (const tenant of tenants)
      printLine(`${tenant.externalRef} (${planLabel(tenant.from)} → ${label}): ${changesLine(tenant.changes)}`);
    printLine(
      `dry run: ${tenants.length} tenant${tenants.length === 1 ? '' : 's'} of ${page.from} to move onto ${label}; ` +
        'nothing was done',
    );
  }

  plans
    .command('rollout-status')
    .description("a rollout's progress: stage, pause, totals, held and failed tenants")
    .argument('<rollout>', 'name@version')
    .option('--json', 'print JSON')
    .action(async (spec: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<RolloutView>(rolloutPath(await rolloutArg(spec)));
        if (opts.json) printJson(view);
        else for (const line of rolloutLines(view)) printLine(line);
      }),
    );

  for (const decision of ['pause', 'resume'] as const)
    plans
      .command(decision)
      .description(
        decision === 'pause'
          ? 'pause a rollout: no tenant is started until it is resumed (those running finish); needs plans.manage'
          : 'resume a paused rollout from where it paused; needs plans.manage',
      )
      .argument('<rollout>', 'name@version')
      .requiredOption('--reason <text>', 'why (audited)')
      .option('--json', 'print JSON')
      .action(async (spec: string, opts: { reason: string; json?: boolean }) =>
        withGateway(async (gateway) => {
          const plan = await rolloutArg(spec);
          const { data: answer } = await inFlags(
            gateway.call<DecisionAnswer & { plan: PlanRef }>('POST', `${rolloutPath(plan)}/${decision}`, {
              body: { reason: opts.reason },
            }),
            FLAG_OF,
          );
          if (opts.json) printJson(answer);
          else
            printLine(
              `${decision === 'pause' ? 'paused' : 'resumed'} rollout of plan ${planLabel(plan)}: ${answer.effect}`,
            );
        }),
      );

  plans
    .command('assign')
    .description(
      "move one tenant onto a plan version (another plan, or its plan's newer one): its convergence run " +
        'plan:<ref> (needs plans.manage)',
    )
    .argument('<externalRef>')
    .argument('<plan>', 'name or name@version (a name: its latest version)')
    .option('--reason <text>', 'why (audited)')
    .option('--wait', 'wait for the convergence (exit 0: converged or unchanged, 3: held or skipped, 1: failed)')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, plan: string, opts: { reason?: string; wait?: boolean; json?: boolean }) =>
      withGateway(async (gateway) => {
        const path = `/v1/tenants/${segment(externalRef, 'externalRef')}/plan`;
        const { data: start } = await inFlags(
          gateway.call<AssignStart>('POST', path, {
            body: { plan, ...(opts.reason !== undefined ? { reason: opts.reason } : {}) },
          }),
          { ...FLAG_OF, plan: '<plan>' },
        );
        const label = planLabel(start.plan);
        if (!opts.wait) {
          if (opts.json) return printJson(start);
          printLine(
            `${start.started ? 'started' : 'joined the running'} ${start.workflowId}: ${externalRef} onto plan ` +
              `${label}`,
          );
          return;
        }
        const { completedResult, hasEnded, pollUntil, standingOf } = await import('../poll-run.js');
        let last: ConvergenceView | null = null;
        const view = await pollUntil(
          async () => {
            last = await gateway.get<ConvergenceView>(path);
            return hasEnded({ status: last.runStatus }) ? last : undefined;
          },
          500,
          () => (last ? [standingOf({ workflowId: last.workflowId, status: last.runStatus })] : []),
        );
        const result = completedResult<ConvergeTenantPlanResult>({
          workflowId: view.workflowId,
          status: view.runStatus,
          result: view.result,
          failure: view.error ? { message: view.error, type: null, causes: [] } : null,
        });
        if (opts.json) return printJson(result);
        printLine(
          `${externalRef}: ${result.outcome} (${planLabel(result.from)} → ${planLabel(result.to)})` +
            (result.changes ? `: ${changesLine(result.changes)}` : ''),
        );
        for (const key of result.keys) printLine(`  key ${key.slot}: ${key.keyId} (${key.outcome})`);
        for (const key of result.retired) printLine(`  retired ${key.slot}: ${key.keyId}`);
        if (result.funding) printLine(`  funding ${result.funding.idempotencyKey}: ${result.funding.state}`);
        if (result.reason) printLine(`  why: ${result.reason}`);
      }),
    );

  plans
    .command('list')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const list = await gateway.get<PlanSummary[]>('/v1/plans');
        if (opts.json) return printJson(list);
        if (list.length === 0) return printLine('no plans');
        for (const plan of list)
          printLine(
            `${plan.name}  version ${plan.latestVersion}  created ${plan.createdAt}  ` +
              `last changed ${plan.updatedAt} by ${plan.updatedBy}`,
          );
      }),
    );
}
