import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes: registered by the dev-server launcher (`--search-attribute`) and, for a
 * real cluster, by `tenantctl setup search-attributes`. Safe to import from workflows (no I/O).
 */
export const SEARCH_ATTRIBUTES = {
  TenantExternalRef: 'Keyword',
  TenantSubaccountId: 'Keyword',
  TenantStatus: 'Keyword',
} as const;

export const tenantExternalRefKey = defineSearchAttributeKey('TenantExternalRef', SearchAttributeType.KEYWORD);
export const tenantSubaccountIdKey = defineSearchAttributeKey('TenantSubaccountId', SearchAttributeType.KEYWORD);
export const tenantStatusKey = defineSearchAttributeKey('TenantStatus', SearchAttributeType.KEYWORD);
