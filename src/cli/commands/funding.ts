import type { Command } from 'commander';
import type { FundingPolicyView, ParentFundingState } from '../../client/money/funding-policy.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';
import { inFlags } from './top-ups.js';

// Every command here is a client of the gateway's /v1 API: the server reads, writes and schedules.

/** `tenantctl funding ...`: auto top-up policies, the parent's daily cap, the sweep's Schedule. */
const FLAG_OF: Record<string, string> = {
  below: '--below',
  to: '--to',
  maxPerDay: '--max-per-day',
  maxPerMonth: '--max-per-month',
};

function printPolicy(view: FundingPolicyView): void {
  const p = view.policy;
  printLine(
    p
      ? `policy of ${view.externalRef}: below ${p.below} → top up to ${p.to}; at most ` +
          `${p.maxPerDay}/day${p.maxPerMonth ? `, ${p.maxPerMonth}/month` : ''} (set by ` +
          `${p.updatedBy})`
      : `no auto top-up policy for ${view.externalRef}`,
  );
  printLine(
    `held by top-ups: today ${view.usage.tenantDay}, this month ` +
      `${view.usage.tenantMonth}; the parent today ` +
      `${view.usage.parentDay}${view.parent.maxPerDay ? ` of ${view.parent.maxPerDay}` : ''} ` +
      `micro-USD`,
  );
  if (view.parent.insufficientSince) printLine(shortfallLine(view.parent));
}

function shortfallLine(parent: { insufficientSince: string | null; insufficientMicroUsd: string | null }): string {
  const held =
    parent.insufficientMicroUsd === null
      ? 'every transfer waits'
      : `transfers of ${parent.insufficientMicroUsd} micro-USD or more wait, smaller ones go ahead`;
  return (
    `the platform has refused transfers for the parent's balance (INSUFFICIENT_BALANCE) since ` +
    `${parent.insufficientSince}: ` +
    `${held} until \`tenantctl parent-funded\` or a transfer that large succeeds`
  );
}

export function registerFundingCommands(program: Command): void {
  const funding = program
    .command('funding')
    .description('auto top-up: policies per tenant, the parent-wide daily cap, the sweep schedule');
  const policy = funding.command('policy').description("a tenant's auto top-up policy and spend caps");
  const policyPath = (externalRef: string) => `/v1/tenants/${segment(externalRef, 'externalRef')}/funding-policy`;
  policy
    .command('set')
    .argument('<externalRef>')
    .requiredOption('--below <microUsd>', 'top up when the wallet is below this')
    .requiredOption('--to <microUsd>', 'top up to this balance')
    .requiredOption('--max-per-day <microUsd>', 'cap on all top-ups of the tenant per UTC day')
    .option('--max-per-month <microUsd>', 'cap on all top-ups of the tenant per UTC month')
    .option('--json', 'print JSON')
    .action(
      async (
        externalRef: string,
        opts: { below: string; to: string; maxPerDay: string; maxPerMonth?: string; json?: boolean },
      ) =>
        withGateway(async (gateway) => {
          // Who sets it is the token's name; the limits (TRANSFER_MAX_MICRO_USD) are the gateway's.
          const body = {
            below: opts.below,
            to: opts.to,
            maxPerDay: opts.maxPerDay,
            ...(opts.maxPerMonth !== undefined ? { maxPerMonth: opts.maxPerMonth } : {}),
          };
          const { data: view } = await inFlags(
            gateway.call<FundingPolicyView>('PUT', policyPath(externalRef), { body }),
            FLAG_OF,
          );
          if (opts.json) printJson(view);
          else printPolicy(view);
        }),
    );
  policy
    .command('show')
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<FundingPolicyView>(policyPath(externalRef));
        if (opts.json) printJson(view);
        else printPolicy(view);
      }),
    );
  policy
    .command('clear')
    .argument('<externalRef>')
    .action(async (externalRef: string) =>
      withGateway(async (gateway) => {
        const {
          data: { cleared },
        } = await gateway.call<{ cleared: boolean }>('DELETE', policyPath(externalRef));
        printLine(
          cleared ? `auto top-up policy of ${externalRef} cleared` : `${externalRef} had no auto top-up policy`,
        );
      }),
    );

  const parent = funding
    .command('parent')
    .description("the parent's daily cap over every top-up of the fleet, and its insufficient-balance state");
  parent
    .command('show')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<ParentFundingState & { usedToday: string }>('/v1/funding/parent');
        if (opts.json) return printJson(view);
        printLine(`parent daily cap: ${view.maxPerDay ?? 'none'}; held by top-ups today: ${view.usedToday} micro-USD`);
        printLine(view.insufficientSince ? shortfallLine(view) : 'balance: no insufficient-balance state');
      }),
    );
  parent
    .command('set-cap')
    .description("who sets it is the token's name (audited)")
    .argument('<maxPerDayMicroUsd>', "micro-USD, or 'none' to remove the cap")
    .action(async (value: string) =>
      withGateway(async (gateway) => {
        const { data: view } = await gateway.call<ParentFundingState>('PUT', '/v1/funding/parent/cap', {
          body: { maxPerDay: value === 'none' ? null : value },
        });
        printLine(`parent daily cap: ${view.maxPerDay ?? 'none'}`);
      }),
    );

  const schedule = funding.command('schedule').description('the auto top-up sweep on a Temporal Schedule');
  schedule
    .command('create')
    .option('--every <duration>', 'how often to sweep', '15m')
    .option('--page-size <n>', 'tenants per page (one run per page)', '100')
    .action(async (opts: { every: string; pageSize: string }) =>
      withGateway(async (gateway) => {
        const made = await gateway.post<{ scheduleId: string; outcome: string }>('/v1/funding/schedule', {
          every: opts.every,
          pageSize: Number(opts.pageSize),
        });
        printLine(`${made.outcome} schedule ${made.scheduleId}: every ${opts.every}`);
      }),
    );
  for (const command of ['describe', 'run-now', 'delete'] as const) {
    schedule.command(command).action(async () =>
      withGateway(async (gateway) => {
        if (command === 'describe') printJson(await gateway.get('/v1/funding/schedule'));
        else {
          await gateway.post(`/v1/funding/schedule/${command}`);
          printLine(`${command}: done`);
        }
      }),
    );
  }
}
