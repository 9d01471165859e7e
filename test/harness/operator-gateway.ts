/**
 * The gateway tenantctl's operator commands talk to, for tests that run tenantctl as a child
 * process: a gateway over the test file's database, Temporal client and task queue, listening on
 * loopback, that knows the harness operator (`ops`, an admin) unless a test brings identities of its
 * own. `cliEnv` is what a child tenantctl needs to reach it: the URL and a token, nothing else.
 */
import type { Client } from '@temporalio/client';
import type { Pool } from '../../src/db/pool.js';
import type { GatewayOptions } from '../../src/gateway/options.js';
import { createOperatorDirectory, generateOperator, parseOperatorList } from '../../src/secrets/operators.js';
import { listenGatewayOver } from './gateway-app.js';
import type { LooseJson } from './sim-calls.js';

export const HARNESS_OPERATOR = { name: 'ops', ...generateOperator('ops', 'admin') };

export interface OperatorGateway {
  url: string;
  cliEnv: { TENANTCTL_GATEWAY_URL: string; TENANTCTL_OPERATOR_TOKEN: string };
  close(): Promise<void>;
}

export async function startOperatorGateway(
  env: { pool: Pool; client: Client; taskQueue: string; secretsKeys: string },
  options: { entries?: string[]; gateway?: Partial<GatewayOptions> } = {},
): Promise<OperatorGateway> {
  const parsed = parseOperatorList([HARNESS_OPERATOR.entry, ...(options.entries ?? [])].join(','));
  if (!parsed.ok) throw new Error(parsed.problems.join('; '));
  const { gateway, url } = await listenGatewayOver(env, {
    operators: createOperatorDirectory(parsed.operators),
    ...options.gateway,
  });
  return {
    url,
    cliEnv: { TENANTCTL_GATEWAY_URL: url, TENANTCTL_OPERATOR_TOKEN: HARNESS_OPERATOR.token },
    close: () => gateway.app.close(),
  };
}

/** One HTTP call to a gateway as the bearer of `token`: status and the parsed envelope (tests only). */
export async function callAs(
  url: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: LooseJson }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as LooseJson };
}
