/**
 * tenantctl's program (main.ts, the entry, loads it). Answers like a CLI: this file and the command files load only
 * commander and the command definitions; each action imports what it needs when it runs (see run.ts), so `--help`
 * or a misspelt flag never loads pg, Temporal or the worker. bin/tenantctl.js runs the compiled copy in dist/ when
 * it is fresh.
 */
import { Command } from 'commander';
import { registerDriftCommands } from './commands/drift.js';
import { registerGatewayCommands } from './commands/gateway.js';
import { registerLifecycleCommands } from './commands/lifecycle.js';
import { registerOnboardingCommands } from './commands/onboarding.js';
import { registerRotationCommands } from './commands/rotation.js';
import { registerTenantCommands } from './commands/tenants.js';
import { registerTopUpCommands } from './commands/top-ups.js';
import { registerFundingCommands } from './commands/funding.js';
import { registerPlanCommands } from './commands/plans.js';
import { registerWebhookCommands } from './commands/webhooks.js';
import { registerApprovalCommands, registerSafeOpsCommands } from './commands/safe-ops.js';
import { addWaitTimeouts, setOperatorTokenFlag, setWaitFlags, withRuntime } from './run.js';
import { registerImportCommands } from './commands/import.js';
import { registerParentKeyCommands } from './commands/parent-key.js';
import { registerEventCommands } from './commands/events.js';
import { registerDecideCommand } from './commands/decide.js';
import { printBlock, printErrorBlock, printErrorLine, printLine, terminalSafeBlock } from './output.js';

const program = new Command('tenantctl')
  .description('Operate the tenant provisioning orchestrator')
  .showHelpAfterError()
  // Commander's errors quote the arguments (`unknown option '...'`): escaped like every value shown.
  .configureOutput({ outputError: (text, write) => write(terminalSafeBlock(text)) })
  .option(
    '--operator-token <token>',
    'your operator token (else TENANTCTL_OPERATOR_TOKEN); only with an OPERATORS list',
  )
  .hook('preAction', async (_program, action) => {
    setOperatorTokenFlag((program.opts() as { operatorToken?: string }).operatorToken);
    await setWaitFlags(action);
  });

program
  .command('migrate')
  .description(
    'apply pending database migrations (forward-only, serialised by an advisory lock); local: needs DATABASE_URL',
  )
  .action(async () =>
    withRuntime(async (runtime) => {
      const { migrate } = await import('../db/migrate.js');
      const result = await migrate(runtime.pool());
      printLine(
        result.applied.length
          ? `applied ${result.applied.join(', ')}; schema at version ${result.to}`
          : `schema already at version ${result.to}`,
      );
    }),
  );

program
  .command('worker')
  .description('run the Temporal worker (all workflows and activities) until SIGINT/SIGTERM')
  .action(async () => {
    const [{ loadCliConfig }, { startWorker }] = await Promise.all([
      import('./context.js'),
      import('../main/worker.js'),
    ]);
    const config = loadCliConfig();
    const running = await startWorker(config);
    printLine(
      `worker polling task queue ${config.TEMPORAL_TASK_QUEUE} (workflows: ${running.workflows}; ` +
        `${running.heapGrowth})`,
    );
    const stop = () => void running.shutdown();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await running.done;
  });

program
  .command('setup')
  .description(
    "register the namespace (when missing) and the project's search attributes on a " +
      'self-hosted Temporal cluster (idempotent); local: needs the Temporal credentials',
  )
  .action(async () =>
    withRuntime(async (runtime) => {
      const [{ ensureSearchAttributes }, { ensureNamespace }] = await Promise.all([
        import('../client/search-attributes-setup.js'),
        import('../client/namespace-setup.js'),
      ]);
      const client = await runtime.client();
      if (await ensureNamespace(client.connection, client.options.namespace))
        printLine(`registered namespace ${client.options.namespace}`);
      const added = await ensureSearchAttributes(client, client.options.namespace);
      printLine(
        added.length ? `registered search attributes: ${added.join(', ')}` : 'search attributes already registered',
      );
    }),
  );

program
  .command('config')
  .description(
    'list every configuration variable by area with its default (values are never shown); local: needs nothing',
  )
  .option('--markdown', 'print docs/configuration.md as generated from the schema')
  .action(async (opts: { markdown?: boolean }) => {
    const { configListing } = await import('../config/docs.js');
    const { configPage } = await import('./config-page.js');
    printBlock(opts.markdown ? configPage() : configListing());
  });

const secrets = program.command('secrets').description('master keys');
secrets
  .command('generate-key')
  .description('print a new master key entry (keyId:base64) to put first in SECRETS_KEYS')
  .argument('<keyId>', 'a short id, e.g. k2026a')
  .action(async (keyId: string) => {
    const { generateMasterKey } = await import('../secrets/master-keys.js');
    printLine(generateMasterKey(keyId));
  });
secrets
  .command('reseal')
  .description(
    're-encrypt every sealed token and webhook secret under the first key of SECRETS_KEYS (master-key ' +
      'rotation); local: needs DATABASE_URL and SECRETS_KEYS',
  )
  .option('--check', 'only count what is not yet under the current key')
  .action(async (opts: { check?: boolean }) =>
    withRuntime(async (runtime) => {
      const [{ masterKeysOf }, { resealAll }, { createVault }] = await Promise.all([
        import('../main/wiring/data-converter.js'),
        import('../secrets/reseal.js'),
        import('../secrets/vault.js'),
      ]);
      const keys = masterKeysOf(runtime.config);
      if (!keys) throw new Error('SECRETS_KEYS: is required to reseal');
      const report = await resealAll(
        { pool: runtime.pool(), vault: createVault(keys) },
        { dryRun: opts.check ?? false },
      );
      const verb = opts.check ? 'to reseal' : 'resealed';
      printLine(
        `tenant tokens: ${report.tokens.resealed} ${verb}, ${report.tokens.current} already under ${keys.current.id}`,
      );
      printLine(
        `webhook secrets: ${report.webhookSecrets.resealed} ${verb}, ` +
          `${report.webhookSecrets.current} already under ${keys.current.id}`,
      );
      printLine(
        `parent keys: ${report.parentKeys.resealed} ${verb}, ${report.parentKeys.current} ` +
          `already under ${keys.current.id}`,
      );
      if (opts.check && report.tokens.resealed + report.webhookSecrets.resealed + report.parentKeys.resealed > 0)
        process.exitCode = 1;
    }),
  );

registerOnboardingCommands(program);
registerDecideCommand(program);
registerLifecycleCommands(program);
registerTenantCommands(program);
registerTopUpCommands(program);
registerFundingCommands(program);
registerPlanCommands(program);
registerRotationCommands(program);
registerGatewayCommands(program);
registerWebhookCommands(program);
registerDriftCommands(program);
registerSafeOpsCommands(program);
registerApprovalCommands(program);
registerImportCommands(program);
registerParentKeyCommands(program);
registerEventCommands(program);
addWaitTimeouts(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  const [{ reportError }, { inspect }] = await Promise.all([import('../main/report-error.js'), import('node:util')]);
  process.exitCode = reportError(error, { problem: printErrorLine, debug: (e) => printErrorBlock(inspect(e)) });
}
