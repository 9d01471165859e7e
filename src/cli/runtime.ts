import type { Client } from '@temporalio/client';
import { ConfigError, reportConfigWarnings, type Config } from '../config/index.js';
import { createPool, type Pool } from '../db/pool.js';
import { safeOpsOf, type SafeOps } from '../main/wiring/safe-ops.js';
import { UnknownOperatorError } from '../secrets/operators.js';
import { loadCliConfig } from './context.js';
import { printErrorLine } from './output.js';

/** Lazily opened connections for one CLI command; close() releases whatever was opened. */
export interface CliRuntime {
  config: Config;
  pool(): Pool;
  client(): Promise<Client>;
  close(): Promise<void>;
  safeOps: SafeOps;
  /**
   * Who acts, for the audit log. With an OPERATORS list: the operator whose token was presented
   * (`--operator-token` or TENANTCTL_OPERATOR_TOKEN); a typed `--operator` is refused unless it is
   * that same name. Without a list (the dev stack): the typed name, else `fallback`.
   */
  operator(typed: string | undefined, fallback?: string): string;
}

export function createCliRuntime(tokenFlag?: string): CliRuntime {
  const config = loadCliConfig();
  reportConfigWarnings(config, (message) => printErrorLine(`warning: ${message}`));
  const safeOps = safeOpsOf(config);
  let pool: Pool | undefined;
  let client: Promise<Client> | undefined;
  return {
    config,
    safeOps,
    operator(typed, fallback) {
      const token = tokenFlag ?? config.TENANTCTL_OPERATOR_TOKEN;
      if (safeOps.operators.size === 0) {
        // No local list: the token is for the gateway, which checks it; here the typed name stands.
        const name = typed ?? fallback;
        if (name === undefined) throw new ConfigError(['--operator: is required (who acts; it is audited)']);
        return name;
      }
      if (token === undefined)
        throw new UnknownOperatorError(
          'TENANTCTL_OPERATOR_TOKEN: is required (OPERATORS is configured: every action is ' +
            'recorded under the operator whose token is presented; or pass --operator-token)',
        );
      const name = safeOps.operators.authenticate(token);
      if (name === undefined)
        throw new UnknownOperatorError('TENANTCTL_OPERATOR_TOKEN: no operator in OPERATORS has this token');
      if (typed !== undefined && typed.trim() !== name)
        throw new UnknownOperatorError(
          `--operator: the token authenticates ${name}, not the name typed (leave --operator out)`,
        );
      return name;
    },
    pool() {
      if (!config.DATABASE_URL)
        throw new ConfigError(['DATABASE_URL: is not set (and no dev stack is running: start one with `npm start`)']);
      pool ??= createPool(config.DATABASE_URL, { max: 2, applicationName: 'tenantctl' });
      return pool;
    },
    client() {
      // One connection however many callers ask at once. Loaded on first use, not with this module:
      // a command that never asks for Temporal does not load its client (the heaviest modules a
      // command can load), and one that does may read the database while the client connects.
      client ??= Promise.all([import('../client/connection.js'), import('../main/wiring/data-converter.js')]).then(
        ([{ connectClient }, { dataConverterOf }]) => connectClient(config, dataConverterOf(config)),
      );
      return client;
    },
    async close() {
      await pool?.end();
      // A connection that failed to open has nothing to close (its error went to the command).
      const connected = await client?.catch(() => undefined);
      await connected?.connection.close();
    },
  };
}
