import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { SEARCH_ATTRIBUTES } from '../domain/search-attributes.js';

/**
 * Registers the project's search attributes on a self-hosted cluster (the dev server gets them as
 * start flags). Temporal Cloud namespaces take them through the Cloud UI or `tcld` instead.
 * Idempotent: attributes already present are left alone.
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<string[]> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const present = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.keys(SEARCH_ATTRIBUTES).filter((name) => !present.has(name));
  if (missing.length === 0) return [];
  await client.connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((name) => [name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return missing;
}
