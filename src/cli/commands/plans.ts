import type { Command } from 'commander';
import type { PlanSummary, PlanView } from '../../client/plans.js';
import { printJson, segment, withGateway } from '../run.js';
import { inFlags } from './top-ups.js';

// Every command here is a client of the gateway's /v1 API: the server validates, writes and audits.

/** `tenantctl plans ...`: plans as versioned records (docs/plans.md). */
const FLAG_OF: Record<string, string> = { expectVersion: '--expect-version', version: '--version', reason: '--reason' };

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
  console.log(`plan ${view.name} version ${view.version} (${latest}), made ${view.createdAt} by ${view.createdBy}`);
  if (view.reason) console.log(`reason: ${view.reason}`);
  console.log(JSON.stringify(view.plan, null, 2));
}

/** `--version` and `--expect-version` as the gateway reads them: a number when it is one, else the text. */
function versionValue(value: string): number | string {
  return /^[1-9][0-9]{0,9}$/.test(value) ? Number(value) : value;
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
        else console.log(`created plan ${view.name} version ${view.version}`);
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
          else console.log(`updated plan ${view.name}: version ${view.version}`);
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

  plans
    .command('list')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const list = await gateway.get<PlanSummary[]>('/v1/plans');
        if (opts.json) return printJson(list);
        if (list.length === 0) return console.log('no plans');
        for (const plan of list)
          console.log(
            `${plan.name}  version ${plan.latestVersion}  created ${plan.createdAt}  ` +
              `last changed ${plan.updatedAt} by ${plan.updatedBy}`,
          );
      }),
    );
}
