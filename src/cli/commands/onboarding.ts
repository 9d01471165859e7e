import type { Command } from 'commander';
import type { TransferOutcome } from '../../domain/operator-decisions.js';
import { ONBOARDING_PURPOSE } from '../../domain/onboarding.js';
import { lifecycleWorkflowId, onboardingWorkflowId, topUpWorkflowId } from '../../domain/ids.js';
import { printJson, withRuntime } from '../run.js';

export function registerOnboardingCommands(program: Command): void {
  program
    .command('onboard')
    .description('start (or join) the onboarding of a tenant: create the sub-account, fund it, issue its first key')
    .requiredOption('--external-ref <ref>', 'your own reference for the tenant (unique)')
    .requiredOption('--name <name>', 'display name of the tenant')
    .option('--funding <microUsd>', 'initial transfer in micro-USD, as a whole number (e.g. 5000000 = 5 USD)')
    .option('--wait', 'wait until onboarding finishes and print the result')
    .option('--dry-run', 'check the input, the ref, the parent balance and the platform, print the plan; write nothing')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        externalRef: string;
        name: string;
        funding?: string;
        wait?: boolean;
        dryRun?: boolean;
        json?: boolean;
      }) =>
        withRuntime(async (runtime) => {
          const input = {
            externalRef: opts.externalRef,
            name: opts.name,
            ...(opts.funding !== undefined ? { fundingMicroUsd: opts.funding } : {}),
          };
          if (opts.dryRun) {
            const [{ dryRunOnboarding }, { cliPlatformClientOf }] = await Promise.all([
              import('../../client/onboarding-preflight.js'),
              import('../../main/wiring/deps.js'),
            ]);
            const { platform, close } = await cliPlatformClientOf(runtime.config, runtime.pool(), { readOnly: true });
            const report = await dryRunOnboarding(
              { pool: runtime.pool(), client: await runtime.client(), platform },
              input,
              { maxTransferMicroUsd: runtime.config.TRANSFER_MAX_MICRO_USD },
            ).finally(close);
            if (opts.json) printJson(report);
            else {
              for (const c of report.checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.check}: ${c.detail}`);
              console.log(report.ok ? 'plan (nothing was done):' : 'would not start; the plan (nothing was done):');
              report.plan.forEach((step, i) => console.log(`  ${i + 1}. ${step}`));
            }
            if (!report.ok) process.exitCode = 1;
            return;
          }
          const { startOnboarding } = await import('../../client/start-onboarding.js');
          const handle = await startOnboarding(await runtime.client(), input, {
            taskQueue: runtime.config.TEMPORAL_TASK_QUEUE,
            maxTransferMicroUsd: runtime.config.TRANSFER_MAX_MICRO_USD,
          });
          const started = { workflowId: handle.workflowId, started: handle.started };
          if (!opts.wait) {
            if (opts.json) printJson(started);
            else
              console.log(
                `${handle.started ? 'started' : 'already running or done'}: ${handle.workflowId} ` +
                  `(follow with: tenantctl status ${opts.externalRef})`,
              );
            return;
          }
          const result = await handle.result();
          if (opts.json) printJson({ ...started, result });
          else
            console.log(
              `tenant ${result.externalRef} is ${result.status}: sub-account ` +
                `${result.subaccountId}, key ${result.keyId} (${result.fingerprint})`,
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
    .option('--operator <name>', 'who acts (audited); only without an OPERATORS list, where the token says who')
    .requiredOption('--reason <text>', 'why (recorded)')
    .option('--json', 'print the answer as JSON')
    .action(async (externalRef: string | undefined, opts: DecisionFlags & { key?: string }) =>
      withRuntime(async (runtime) => {
        const [{ sendDecision }, { parentFundedUpdate }, { printDecision }] = await Promise.all([
          import('../../client/send-decision.js'),
          import('../../../workflows/onboard-tenant-messages.js'),
          import('../decisions.js'),
        ]);
        const by = { operator: runtime.operator(opts.operator), reason: opts.reason };
        if (!externalRef) {
          if (opts.key) throw new Error('--key: only with a tenant');
          const { declareParentFunded } = await import('../../client/parent-funded.js');
          const report = await declareParentFunded({ pool: runtime.pool(), client: await runtime.client() }, by);
          if (opts.json) printJson(report);
          else
            console.log(
              `parent funded (${report.stateCleared ? 'the parent-wide insufficient-balance state is cleared' : 'no parent-wide state was set'}); ` +
                `${report.retried.length} waiting top-up(s) retried now${report.refused.length ? `, ${report.refused.length} no longer waiting` : ''}`,
            );
          return;
        }
        const workflowId = opts.key ? topUpWorkflowId(externalRef, opts.key) : onboardingWorkflowId(externalRef);
        const answer = await sendDecision(await runtime.client(), workflowId, parentFundedUpdate, by);
        printDecision(workflowId, 'parentFunded', answer, opts.json);
      }),
    );

  program
    .command('resolve-transfer')
    .description(
      'an operator verdict on a transfer in needs_operator (check the wallet first): of ' +
        'an onboarding, or with --close of a close',
    )
    .argument('<externalRef>')
    .requiredOption('--outcome <outcome>', 'exactly applied | not-applied')
    .option('--operator <name>', 'who acts (audited); only without an OPERATORS list, where the token says who')
    .requiredOption('--reason <text>', 'why (audited)')
    .option('--close', "the tenant's close is waiting, not its onboarding")
    .option('--key <idempotencyKey>', "a top-up's key: that top-up is waiting, not the onboarding")
    .option('--purpose <purpose>', 'with --close: the transfer', ONBOARDING_PURPOSE)
    .option('--json', 'print the answer as JSON')
    .action(
      async (
        externalRef: string,
        opts: DecisionFlags & { outcome: string; close?: boolean; purpose: string; key?: string },
      ) =>
        withRuntime(async (runtime) => {
          if (!opts.close && opts.purpose !== ONBOARDING_PURPOSE)
            throw new Error('--purpose: only with --close (an onboarding has one transfer)');
          if (opts.close && opts.key) throw new Error('--key: not with --close (name the transfer with --purpose)');
          const [{ sendDecision }, { resolveTransferUpdate }, { closeResolveTransferUpdate }, { printDecision }] =
            await Promise.all([
              import('../../client/send-decision.js'),
              import('../../../workflows/onboard-tenant-messages.js'),
              import('../../../workflows/close-tenant-messages.js'),
              import('../decisions.js'),
            ]);
          const client = await runtime.client();
          // The raw --outcome goes to the workflow: its validator refuses anything but the exact words.
          const verdict = {
            outcome: opts.outcome as TransferOutcome,
            operator: runtime.operator(opts.operator),
            reason: opts.reason,
          };
          const workflowId = opts.close
            ? lifecycleWorkflowId('close', externalRef)
            : opts.key
              ? topUpWorkflowId(externalRef, opts.key)
              : onboardingWorkflowId(externalRef);
          if (runtime.safeOps.approvals.has('resolveTransfer')) {
            const { requestTransferVerdictApproval } = await import('../../client/approvals.js');
            const request = await requestTransferVerdictApproval(
              { pool: runtime.pool(), client },
              {
                externalRef,
                workflowId,
                close: Boolean(opts.close),
                verdict,
                ...(opts.close ? { purpose: opts.purpose } : {}),
                ttlMs: runtime.safeOps.approvalTtlMs,
              },
            );
            if (opts.json)
              printJson({
                status: 'awaiting_approval',
                approvalId: request.id,
                expiresAt: request.expiresAt,
                workflowId,
              });
            else
              console.log(
                `awaiting_approval: ${request.id} (expires ${request.expiresAt.toISOString()}); ` +
                  `nothing is sent to ${workflowId} until another operator runs \`tenantctl ` +
                  `approvals approve ${request.id} --reason "..."\``,
              );
            return;
          }
          const answer = opts.close
            ? await sendDecision(client, workflowId, closeResolveTransferUpdate, { ...verdict, purpose: opts.purpose })
            : await sendDecision(client, workflowId, resolveTransferUpdate, verdict);
          printDecision(workflowId, 'resolveTransfer', answer, opts.json);
        }),
    );
}

interface DecisionFlags {
  operator?: string;
  reason: string;
  json?: boolean;
}
