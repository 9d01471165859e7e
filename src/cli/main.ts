import { Command } from 'commander';
import { describeConfig } from '../config.js';
import { migrate } from '../db/migrate.js';
import { createPool } from '../db/pool.js';
import { startWorker } from '../main/worker.js';
import { loadCliConfig, reportError } from './context.js';

const program = new Command('tenantctl')
  .description('Operate the tenant provisioning orchestrator')
  .showHelpAfterError()
  .configureOutput({ outputError: (text, write) => write(text) });

function requireDatabaseUrl<T extends { DATABASE_URL?: string | undefined }>(config: T): T & { DATABASE_URL: string } {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is not set (and no dev stack is running: start one with `npm start`)');
  return config as T & { DATABASE_URL: string };
}

program
  .command('migrate')
  .description('apply pending database migrations (forward-only, serialised by an advisory lock)')
  .action(async () => {
    const config = requireDatabaseUrl(loadCliConfig());
    const pool = createPool(config.DATABASE_URL, { max: 1 });
    try {
      const result = await migrate(pool);
      console.log(result.applied.length ? `applied ${result.applied.join(', ')}; schema at version ${result.to}` : `schema already at version ${result.to}`);
    } finally {
      await pool.end();
    }
  });

program
  .command('worker')
  .description('run the Temporal worker (all workflows and activities) until SIGINT/SIGTERM')
  .action(async () => {
    const config = requireDatabaseUrl(loadCliConfig());
    const running = await startWorker(config);
    console.log(`worker polling task queue ${config.TEMPORAL_TASK_QUEUE}`);
    const stop = () => void running.shutdown();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    await running.done;
  });

program
  .command('config')
  .description('list every configuration variable with its meaning')
  .action(() => {
    for (const { name, description } of describeConfig()) console.log(`${name.padEnd(22)} ${description}`);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error);
}
