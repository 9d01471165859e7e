import type { Command } from 'commander';
import type { TenantStatusView } from '../../client/tenant-status.js';
import type { RevealAnswer } from '../../client/reveal-key.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';
import { registerKeySlotCommands } from './key-slots.js';

async function printStatus(view: TenantStatusView): Promise<void> {
  const [{ formatRotationSection }, { formatLastRun }] = await Promise.all([
    import('../../client/rotation-status.js'),
    import('../../client/last-runs.js'),
  ]);
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
      `transfer ${t.purpose}: ${t.state} ${t.amountMicroUsd} micro-USD${t.failureCode ? ` (${t.failureCode})` : ''}${t.resolution ? ` [${t.resolution}]` : ''}`,
    );
  }
  for (const line of formatRotationSection(view.rotation)) printLine(line);
  for (const run of view.lastRuns) for (const line of formatLastRun(run)) printLine(line);
}

export function registerTenantCommands(program: Command): void {
  program
    .command('status')
    .description("a tenant's records and its onboarding progress (never a secret)")
    .argument('<externalRef>')
    .option('--json', 'print JSON')
    .action(async (externalRef: string, opts: { json?: boolean }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<TenantStatusView>(`/v1/tenants/${segment(externalRef, 'externalRef')}`);
        if (opts.json) printJson(view);
        else await printStatus(view);
      }),
    );

  program
    .command('list')
    .description('tenants in our records')
    .option('--json', 'print JSON')
    .option('--limit <n>', 'at most this many', '100')
    .option('--after <externalRef>', 'page: start after this external ref')
    .action(async (opts: { json?: boolean; limit: string; after?: string }) =>
      withGateway(async (gateway) => {
        const view = await gateway.get<
          Array<{ externalRef: string; name: string; status: string; subaccountId: string | null; createdAt: string }>
        >('/v1/tenants', { limit: opts.limit, after: opts.after });
        if (opts.json) printJson(view);
        else
          for (const t of view)
            printLine(`${t.externalRef.padEnd(32)} ${t.status.padEnd(10)} ${t.subaccountId ?? '-'}  ${t.name}`);
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
