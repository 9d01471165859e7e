import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/main/wiring/workflow-bundle.js';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/pool.js';
import { ensureDatabase } from '../../src/infra/database.js';
import { startEmbeddedPostgres } from '../../src/infra/embedded-postgres.js';
import { LauncherError } from '../../src/infra/launcher-error.js';
import { startTemporalDevServer } from '../../src/infra/temporal-dev-server.js';
import { dropDatabase } from './database.js';
import { quietLogger } from './quiet-logger.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    /** Admin URL of the Postgres server; each test file clones `templateDatabase` on it. */
    postgresAdminUrl: string;
    templateDatabase: string;
    /** Production workflows plus the harness's own, bundled once for the whole run. */
    workflowBundlePath: string;
  }
}

/**
 * ONE Temporal dev server (headless, in memory) and ONE Postgres for the whole run, or the ones
 * named by TEMPORAL_ADDRESS / DATABASE_URL. A migrated template database is cloned per test file.
 */
export default async function setup(project: TestProject) {
  try {
    return await startAll(project);
  } catch (error) {
    // A launcher failure (a private checkout, a missing binary) is one actionable line, not a stack.
    if (error instanceof LauncherError) {
      const short = new Error(`[harness] ${error.message}`);
      short.stack = short.message;
      throw short;
    }
    throw error;
  }
}

async function startAll(project: TestProject) {
  const stops: Array<() => Promise<void>> = [];
  const log = (line: string) => console.error(`[harness] ${line}`);
  const started = Date.now();

  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  if (!temporalAddress) {
    const server = await startTemporalDevServer({
      headless: true,
      port: 0,
      cliPath: process.env.TEMPORAL_CLI_PATH,
      onProgress: log,
    });
    stops.push(() => server.stop());
    temporalAddress = server.address;
  }

  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    // initdb runs as the postgres user when we are root: its temp parent must be traversable.
    const dir = mkdtempSync(join(tmpdir(), 'tenant-orch-pg-'));
    chmodSync(dir, 0o755);
    const server = await startEmbeddedPostgres({ dataDir: join(dir, 'data'), persistent: false });
    stops.push(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    adminUrl = server.adminUrl;
  }

  const templateDatabase = `tenant_test_tpl_${process.pid}`;
  await dropDatabase(adminUrl, templateDatabase);
  const templateUrl = await ensureDatabase(adminUrl, templateDatabase);
  const pool = createPool(templateUrl, { max: 1 });
  await migrate(pool).finally(() => pool.end());
  stops.push(() => dropDatabase(adminUrl, templateDatabase));

  const bundleDir = mkdtempSync(join(tmpdir(), 'tenant-orch-bundle-'));
  const workflowBundlePath = join(bundleDir, 'workflows.js');
  const { code } = await bundleWorkflowCode({
    ...workflowBundleOptions(fileURLToPath(new URL('./workflows.ts', import.meta.url))),
    logger: quietLogger('bundle'),
  });
  writeFileSync(workflowBundlePath, code);
  stops.push(async () => rmSync(bundleDir, { recursive: true, force: true }));

  project.provide('temporalAddress', temporalAddress);
  project.provide('temporalNamespace', process.env.TEMPORAL_NAMESPACE ?? 'default');
  project.provide('postgresAdminUrl', adminUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('workflowBundlePath', workflowBundlePath);
  log(`Temporal ${temporalAddress} and Postgres ready in ${Date.now() - started} ms`);

  return async () => {
    for (const stop of stops.reverse()) await stop().catch((error: unknown) => log(`teardown: ${String(error)}`));
  };
}
