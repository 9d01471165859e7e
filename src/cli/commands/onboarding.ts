import type { Command } from 'commander';
import { startOnboarding } from '../../client/start-onboarding.js';
import { printJson, withRuntime } from '../runtime.js';

export function registerOnboardingCommands(program: Command): void {
  program
    .command('onboard')
    .description('start (or join) the onboarding of a tenant: create the sub-account, fund it, issue its first key')
    .requiredOption('--external-ref <ref>', 'your own reference for the tenant (unique)')
    .requiredOption('--name <name>', 'display name of the tenant')
    .option('--funding <microUsd>', 'initial transfer in micro-USD, as a whole number (e.g. 5000000 = 5 USD)')
    .option('--wait', 'wait until onboarding finishes and print the result')
    .option('--json', 'print JSON')
    .action(async (opts: { externalRef: string; name: string; funding?: string; wait?: boolean; json?: boolean }) =>
      withRuntime(async (runtime) => {
        const input = { externalRef: opts.externalRef, name: opts.name, ...(opts.funding !== undefined ? { fundingMicroUsd: opts.funding } : {}) };
        const handle = await startOnboarding(await runtime.client(), input, { taskQueue: runtime.config.TEMPORAL_TASK_QUEUE });
        const started = { workflowId: handle.workflowId, started: handle.started };
        if (!opts.wait) {
          if (opts.json) printJson(started);
          else console.log(`${handle.started ? 'started' : 'already running or done'}: ${handle.workflowId} (follow with: tenantctl status ${opts.externalRef})`);
          return;
        }
        const result = await handle.result();
        if (opts.json) printJson({ ...started, result });
        else console.log(`tenant ${result.externalRef} is ${result.status}: sub-account ${result.subaccountId}, key ${result.keyId} (${result.fingerprint})`);
      }),
    );

  program
    .command('parent-funded')
    .description("tell a waiting onboarding that the parent's paid balance was topped up (retries the transfer now)")
    .argument('<externalRef>')
    .action(async (externalRef: string) =>
      withRuntime(async (runtime) => {
        const client = await runtime.client();
        await client.workflow.getHandle(`onboard:${externalRef}`).signal('parentFunded');
        console.log(`signalled parentFunded to onboard:${externalRef}`);
      }),
    );

  program
    .command('resolve-transfer')
    .description('an operator verdict on a funding transfer whose outcome could not be reconciled (after checking the wallet)')
    .argument('<externalRef>')
    .requiredOption('--outcome <outcome>', 'applied | not-applied')
    .requiredOption('--operator <name>', 'who decides (audited)')
    .requiredOption('--reason <text>', 'why (audited)')
    .action(async (externalRef: string, opts: { outcome: string; operator: string; reason: string }) =>
      withRuntime(async (runtime) => {
        if (opts.outcome !== 'applied' && opts.outcome !== 'not-applied') throw new Error('--outcome: must be applied or not-applied');
        const client = await runtime.client();
        await client.workflow.getHandle(`onboard:${externalRef}`).signal('resolveTransfer', { outcome: opts.outcome, operator: opts.operator, reason: opts.reason });
        console.log(`signalled resolveTransfer (${opts.outcome}) to onboard:${externalRef}`);
      }),
    );
}
