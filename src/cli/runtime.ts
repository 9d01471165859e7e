import type { Client } from '@temporalio/client';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { createPool, type Pool } from '../db/pool.js';
import { connectClient } from '../client/connection.js';
import { dataConverterOf } from '../main/wiring/deps.js';
import { loadCliConfig } from './context.js';

/** Lazily opened connections for one CLI command; close() releases whatever was opened. */
export interface CliRuntime {
  config: Config;
  pool(): Pool;
  client(): Promise<Client>;
  close(): Promise<void>;
}

export function createCliRuntime(): CliRuntime {
  const config = loadCliConfig();
  let pool: Pool | undefined;
  let client: Client | undefined;
  return {
    config,
    pool() {
      if (!config.DATABASE_URL)
        throw new ConfigError(['DATABASE_URL: is not set (and no dev stack is running: start one with `npm start`)']);
      pool ??= createPool(config.DATABASE_URL, { max: 2, applicationName: 'tenantctl' });
      return pool;
    },
    async client() {
      client ??= await connectClient(config, dataConverterOf(config));
      return client;
    },
    async close() {
      await pool?.end();
      await client?.connection.close();
    },
  };
}
