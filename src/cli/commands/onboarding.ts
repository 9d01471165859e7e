import type { Command } from 'commander';
import type { OnboardingDryRun as DryRunReport } from '../../client/tenants/onboarding-preflight.js';
import type { AwaitingApproval, DecisionReply } from '../decisions.js';
import type { OnboardTenantResult } from '../../../workflows/onboard-tenant-messages.js';
import { INITIAL_TRANSFER, ONBOARDING_PURPOSE } from '../../domain/onboarding.js';
import { segment, withGateway } from '../run.js';
import { printJson, printLine } from '../output.js';

export function registerOnboardingCommands(program: Command): void {
  program
    .command('onboard')
    .description('start (or join) the onboarding of a tenant: create the sub-account, fund it, issue its first key')
    .requiredOption('--external-ref <ref>', 'your own reference for the tenant (unique)')
    .requiredOption('--name <name>', 'display name of the tenant')
    .option('--funding <microUsd>', 'initial transfer in micro-USD, as a whole number (e.g. 5000000 = 5 USD)')
    .option(
      '--plan <name[@version]>',
      'onboard on a plan (docs/plans.md): its funding, a key per slot, auto top-up and rotation schedules; the ' +
        'latest version unless @version; not with --funding',
    )
    .option('--wait', 'wait until onboarding finishes and print the result')
    .option('--dry-run', 'check the input, the ref, the parent balance and the platform, print the plan; write nothing')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        externalRef: string;
        name: string;
        funding?: string;
        plan?: string;
        wait?: boolean;
        dryRun?: boolean;
        json?: boolean;
      }) =>
        withGateway(async (gateway) => {
          const input = {
            externalRef: opts.externalRef,
            name: opts.name,
            ...(opts.funding !== undefined ? { fundingMicroUsd: opts.funding } : {}),
            ...(opts.plan !== undefined ? { plan: opts.plan } : {}),
          };
          if (opts.dryRun) {
            // The gateway asks the platform (read-only) and our records; a plan that cannot start is a 422 report.
            const { data: report } = await gateway.call<DryRunReport>('POST', '/v1/tenants', {
              query: { dryRun: 'true' },
              body: input,
              dataOn: [422],
            });
            if (opts.json) printJson(report);
            else {
              for (const c of report.checks) printLine(`${c.ok ? 'ok  ' : 'FAIL'} ${c.check}: ${c.detail}`);
              printLine(report.ok ? 'plan (nothing was done):' : 'would not start; the plan (nothing was done):');
              report.plan.forEach((step, i) => printLine(`  ${i + 1}. ${step}`));
            }
            if (!report.ok) process.exitCode = 1;
            return;
          }
          const answer = await gateway.post<{ workflowId: string; started: boolean }>('/v1/tenants', input);
          const started = { workflowId: answer.workflowId, started: answer.started };
          if (!opts.wait) {
            if (opts.json) printJson(started);
            else
              printLine(
                `${answer.started ? 'started' : 'already running or done'}: ${answer.workflowId} ` +
                  `(follow with: tenantctl status ${opts.externalRef})`,
              );
            return;
          }
          const { pollTenant, endedRun, lastRunResult } = await import('../wait-for-run.js');
          const run = await pollTenant(gateway, opts.externalRef, (view) => endedRun(view, 'onboard'), 'onboard');
          const result = lastRunResult<OnboardTenantResult>('onboarding', run);
          if (opts.json) printJson({ ...started, result });
          else
            printLine(
              `tenant ${result.externalRef} is ${result.status}: sub-account ` +
                `${result.subaccountId}, key ${result.keyId} (${result.fingerprint})` +
                (result.plan
                  ? `; on plan ${result.plan.name}@${result.plan.version}: ` +
                    `${result.plan.keys.length} more key(s) ` +
                    `(${result.plan.keys.map((k) => k.slot).join(', ') || 'none'}), ` +
                    `${result.plan.schedules.length} rotation schedule(s), auto top-up ` +
                    `${result.plan.policySet ? 'set' : 'not set'}`
                  : ''),
            );
        }),
    );

  program
    .command('parent-funded')
    .description(
      "the parent's paid balance was topped up: without arguments, clears the " +
        'parent-wide state and retries every waiting top-up now; with a tenant, its ' +
        'onboarding (or with --key, that top-up)',
    )
    .argument('[externalRef]')
    .option('--key <idempotencyKey>', "with a tenant: the top-up's key, not its onboarding")
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--json', 'print the answer as JSON')
    .action(async (externalRef: string | undefined, opts: DecisionFlags & { key?: string }) =>
      withGateway(async (gateway) => {
        // Who decides is the token's name; the gateway sends the Update and answers with the run's answer.
        if (!externalRef) {
          if (opts.key) throw new Error('--key: only with a tenant');
          const report = await gateway.post<{ stateCleared: boolean; retried: string[]; refused: string[] }>(
            '/v1/parent/funded',
            { reason: opts.reason },
          );
          if (opts.json) printJson(report);
          else
            printLine(
              `parent funded (${
                report.stateCleared
                  ? 'the parent-wide insufficient-balance state is cleared'
                  : 'no parent-wide state was set'
              }); ` +
                `${report.retried.length} waiting top-up(s) retried ` +
                `now${report.refused.length ? `, ${report.refused.length} no longer waiting` : ''}`,
            );
          return;
        }
        const answer = await gateway.post<DecisionReply>(
          `/v1/tenants/${segment(externalRef, 'externalRef')}/decisions/parent-funded`,
          {
            reason: opts.reason,
            ...(opts.key !== undefined ? { key: opts.key } : {}),
          },
        );
        await printDecisionReply(answer, opts.json);
      }),
    );

  program
    .command('resolve-transfer')
    .description(
      'an operator verdict on a transfer in needs_operator (check the wallet first): of ' +
        'an onboarding, or with --close of a close; when the server gates it, a request another operator approves',
    )
    .argument('<externalRef>')
    .requiredOption('--outcome <outcome>', 'exactly applied | not-applied')
    .requiredOption('--reason <text>', 'why (audited)')
    .option('--close', "the tenant's close is waiting, not its onboarding")
    .option('--key <idempotencyKey>', "a top-up's key: that top-up is waiting, not the onboarding")
    .option('--purpose <purpose>', 'with --close: the transfer (the first one is initial)', INITIAL_TRANSFER)
    .option('--json', 'print the answer as JSON')
    .action(
      async (
        externalRef: string,
        opts: DecisionFlags & { outcome: string; close?: boolean; purpose: string; key?: string },
      ) =>
        withGateway(async (gateway) => {
          if (!opts.close && opts.purpose !== INITIAL_TRANSFER && opts.purpose !== ONBOARDING_PURPOSE)
            throw new Error('--purpose: only with --close (an onboarding has one transfer)');
          if (opts.close && opts.key) throw new Error('--key: not with --close (name the transfer with --purpose)');
          // The raw --outcome goes to the server, which checks it by the run's own rules (exact words only).
          const answer = await gateway.post<DecisionReply | AwaitingApproval>(
            `/v1/tenants/${segment(externalRef, 'externalRef')}/decisions/resolve-transfer`,
            {
              outcome: opts.outcome,
              reason: opts.reason,
              ...(opts.close ? { close: true, purpose: opts.purpose } : {}),
              ...(opts.key !== undefined ? { key: opts.key } : {}),
            },
          );
          if ('status' in answer && answer.status === 'awaiting_approval') {
            const { printAwaitingApproval } = await import('../decisions.js');
            printAwaitingApproval(answer, opts.json);
            return;
          }
          await printDecisionReply(answer as DecisionReply, opts.json);
        }),
    );
}

interface DecisionFlags {
  reason: string;
  json?: boolean;
}

async function printDecisionReply(reply: DecisionReply, json: boolean | undefined): Promise<void> {
  const { printDecisionReply: print } = await import('../decisions.js');
  print(reply, json);
}
