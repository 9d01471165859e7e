import { Client, Connection, isGrpcServiceError, type ConnectionLike } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { ensureSearchAttributes } from './search-attributes-setup.js';

/**
 * Registers the namespace on a self-hosted cluster when it is missing (the dev server and Temporal
 * Cloud make theirs elsewhere). Retention: closed workflow histories are kept this long, the window
 * in which an operator can still read what a run did.
 */
const NAMESPACE_RETENTION_DAYS = 7;

/** gRPC status codes (not a dependency of ours: @grpc/grpc-js comes with the SDK). */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;

/** Idempotent: true when it registered the namespace, false when it was there already. */
export async function ensureNamespace(connection: ConnectionLike, namespace: string): Promise<boolean> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return false;
  } catch (error) {
    if (!isGrpcServiceError(error) || error.code !== NOT_FOUND) throw error;
  }
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      description: 'tenant orchestrator',
      workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS} days`),
    });
  } catch (error) {
    // Another `setup` won the race: the namespace is there, which is all we want.
    if (isGrpcServiceError(error) && error.code === ALREADY_EXISTS) return false;
    throw error;
  }
  await untilServed(connection, namespace);
  return true;
}

/**
 * A new namespace reaches the services' caches on their next refresh (1 s in
 * deploy/temporal/dynamicconfig, 10 s by default): until then they answer NOT_FOUND. Registering
 * search attributes right after would fail, so wait for the operator service to know it.
 */
async function untilServed(connection: ConnectionLike, namespace: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await connection.operatorService.listSearchAttributes({ namespace });
      return;
    } catch (error) {
      if (!isGrpcServiceError(error) || error.code !== NOT_FOUND || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * What `tenantctl setup` does, for a cluster a launcher just started: the namespace when missing, then the search
 * attributes.
 */
export async function setupNamespace(
  address: string,
  namespace: string,
  progress: (line: string) => void,
): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    if (await ensureNamespace(connection, namespace)) progress(`registered namespace ${namespace}`);
    const added = await ensureSearchAttributes(new Client({ connection, namespace }), namespace);
    if (added.length > 0) progress(`registered search attributes ${added.join(', ')}`);
  } finally {
    await connection.close();
  }
}
