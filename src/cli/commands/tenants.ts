import type { Command } from 'commander';
import type { AttentionItem } from '../../client/tenants/attention.js';
import type { TenantListRow } from '../../client/tenants/tenant-list.js';
import type { TenantStatusView } from '../../client/tenants/tenant-status.js';
import type * as StatusLines from '../status-lines.js';
import type { RevealAnswer } from '../../client/keys/reveal-key.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';
import { registerKeySlotCommands } from './key-slots.js';
import { takeEarlyAnswer } from '../early-read.js';

/** What waits for a person, as `status` and `list` print it: the run (or the hold), its words, what ends it. */
function attentionLines(items: readonly AttentionItem[] | undefined, indent: string): string[] {
  return (items ?? []).flatMap((item) => [
    `${indent}attention ${item.workflowId} (${item.stage}): ${item.lines[0] ?? ''}`,
    ...item.lines.slice(1).map((line) => `${indent}  ${line}`),
    ...item.wayOut.map((step) => `${indent}  ${item.stage === 'held' ? 'way out' : 'decision'}: ${step}`),
  ]);
}

/** A row as the gateway answers it (a gateway from before issue 47 sends no plan or attention). */
type TenantRowView = Omit<TenantListRow, 'plan' | 'attention'> & Partial<Pick<TenantListRow, 'plan' | 'attention'>>;

function printStatus(view: TenantStatusView, printers: typeof StatusLines): void {
  const { formatFleetRun, formatLastRun, formatPlanSection, formatRotationSection } = printers;
  const r = view.record;
  printLine(
    `tenant ${view.externalRef}: ` +
      `${r ? `${r.status} — "${r.name}", sub-account ${r.subaccountId ?? '(none yet)'}` : 'no record yet'}` +
      (r?.plan ? `, plan ${r.plan.name}@${r.plan.version}` : ''),
  );
  if (view.onboarding) {
    const p = view.onboarding.progress;
    printLine(`onboarding ${view.onboarding.workflowId}: ${view.onboarding.runStatus}${p ? `, stage ${p.stage}` : ''}`);
    if (p?.waitingFor) printLine(`  waiting: ${p.waitingFor}`);
    if (p?.error) printLine(`  error: ${p.error}`);
  }
  for (const k of view.keys)
    printLine(
      `key ${k.slot} g${k.generation}: ${k.status} ${k.keyId ?? ''} ` +
        `${k.fingerprint ?? ''}${k.verified ? ' (verified)' : ''}`,
    );
  for (const t of view.transfers) {
    printLine(
      `transfer ${t.purpose}: ${t.state} ${t.amountMicroUsd} ` +
        `micro-USD${t.failureCode ? ` (${t.failureCode})` : ''}${t.resolution ? ` [${t.resolution}]` : ''}`,
    );
  }
  for (const line of formatRotationSection(view.rotation)) printLine(line);
  for (const line of view.plan ? formatPlanSection(view.plan) : []) printLine(line);
  for (const run of view.fleetRuns ?? []) for (const line of formatFleetRun(run)) printLine(line);
  // The plan convergence is the plan section above.
  for (const run of view.lastRuns.filter((r) => r.kind !== 'plan'))
    for (const line of formatLastRun(run)) printLine(line);
  for (const line of attentionLines(view.attention, '')) printLine(line);
}

export function registerTenantCommands(program: Command): void {
  program
    .command('status')
    .description("a tenant's records and its onboarding progress (never a secret)")
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const path = `/v1/tenants/${segment(externalRef, 'externalRef')}`;
        // Sent as the process started when the command was given in its plainest form (early-read.ts).
        const answer = takeEarlyAnswer<TenantStatusView>(path) ?? gateway.get<TenantStatusView>(path);
        // The printers load while the gateway answers (both settle before either is used).
        const [view, printers] = await Promise.all([answer, opts.json ? null : import('../status-lines.js')]);
        if (!printers) printJson(view);
        else printStatus(view, printers);
      }),
    );

  program
    .command('list')
    .description('tenants in our records, each with its plan version; `attention` marks what waits for a person')
    .option('--json', 'print JSON')
    .option('--limit <n>', 'at most this many', '100')
    .option('--after <externalRef>', 'page: start after this external ref')
    .option('--attention', 'only the tenants with a run (or a plan hold) that waits for a person, and what ends it')
    .action(async (opts: { json?: boolean; limit: string; after?: string; attention?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<TenantRowView[]>('/v1/tenants', {
          limit: opts.limit,
          after: opts.after,
          ...(opts.attention ? { attention: 'true' } : {}),
        });
        if (opts.json) printJson(view);
        else
          for (const t of view) {
            const plan = t.plan ? `${t.plan.name}@${t.plan.version}` : '';
            const mark = t.attention?.length ? 'attention' : '';
            printLine(
              `${t.externalRef.padEnd(32)} ${t.status.padEnd(10)} ${mark.padEnd(9)} ${plan.padEnd(16)} ` +
                `${t.subaccountId ?? '-'}  ${t.name}`,
            );
            if (opts.attention) for (const line of attentionLines(t.attention, '  ')) printLine(line);
          }
      }),
    );

  const key = program.command('key').description('tenant keys');
  key
    .command('reveal')
    .description(
      "print a tenant's active key token (the one way to read it back; audited; through the gateway, " +
        'after a second operator approves when the server gates reveals)',
    )
    .argument('<externalRef>')
    .option('--slot <slot>', 'key slot', 'default')
    .requiredOption('--reason <text>', 'why (audited; not empty)')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { slot: string; reason: string; json?: boolean }) =>
      withGateway(async (gateway) => {
        // The gateway opens the vault and applies its own approval policy; who reads is the token's name.
        const answer = await gateway.post<RevealAnswer>(
          `/v1/tenants/${segment(externalRef, 'externalRef')}/keys/${segment(opts.slot, '--slot')}/reveal`,
          { reason: opts.reason },
        );
        if (answer.status === 'awaiting_approval') {
          if (opts.json) printJson(answer);
          else
            printLine(
              `awaiting_approval: ${answer.approvalId} (expires ${answer.expiresAt}); ` +
                `another operator runs \`tenantctl approvals approve ${answer.approvalId} --reason ` +
                `"..."\`, then run this again`,
            );
          return;
        }
        const { status: _status, ...revealed } = answer;
        if (opts.json) printJson(revealed);
        else printLine(revealed.token);
      }),
    );
  registerKeySlotCommands(key);
}
