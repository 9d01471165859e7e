import type { LastUse } from './last-use.js';
import type { KeyStatus, TenantStatus } from './status.js';

// The client's view of platform records: every field the contract names, under one spelling, optional wherever the
// contract does not promise it. Unknown fields are dropped (and with them anything secret a platform might echo).

export interface SubaccountRecord {
  id: string;
  name: string | undefined;
  externalRef: string | undefined;
  /** Normalised; `unknown` for a word we do not recognise (see rawStatus). */
  status: TenantStatus;
  rawStatus: string | undefined;
  parentId: string | undefined;
  /** Values inside a tenant's limits are not shown by the contract; kept as given. */
  limits: Record<string, unknown> | undefined;
  createdAt: string | undefined;
}

export interface ApiKeyRecord {
  id: string;
  name: string | undefined;
  status: KeyStatus;
  rawStatus: string | undefined;
  subaccountId: string | undefined;
  createdAt: string | undefined;
  /**
   * Seen at a time, shown as never used, or unknown (not shown, or shown under fields we cannot read): see last-use.ts.
   */
  lastUse: LastUse;
  /** The platform's use counter, when it shows one. */
  useCount: number | undefined;
  /** Derived from `lastUse`: the time when seen, `null` when never used, `undefined` when unknown. */
  lastUsedAt: string | null | undefined;
  /** Derived from `lastUse`: false when unknown (for any reason). */
  lastUseKnown: boolean;
}

export interface TransferRecord {
  id: string | undefined;
  subaccountId: string | undefined;
  amountMicroUsd: string | undefined;
  idempotencyKey: string | undefined;
  rawStatus: string | undefined;
  createdAt: string | undefined;
}

/** Wallet fields are not shown by the contract: everything is optional and `balanceKnown` says if we found one. */
export interface WalletRecord {
  subaccountId: string | undefined;
  balanceMicroUsd: string | undefined;
  balanceKnown: boolean;
  currency: string | undefined;
  /** Recent transfers, when the platform includes them (useful to reconcile an ambiguous transfer). */
  transfers: TransferRecord[] | undefined;
}

export interface ProjectRecord {
  id: string;
  name: string | undefined;
  region: string | undefined;
  createdAt: string | undefined;
  rawStatus: string | undefined;
}

export interface WebhookRecord {
  id: string;
  label: string | undefined;
  url: string | undefined;
  events: string[];
  rawStatus: string | undefined;
  createdAt: string | undefined;
}

/** Delivery record field names and status values are not shown; the status is kept as the platform's word. */
export interface WebhookDeliveryRecord {
  deliveryId: string;
  event: string | undefined;
  rawStatus: string | undefined;
  responseCode: number | undefined;
  responseBody: string | undefined;
  error: string | undefined;
  createdAt: string | undefined;
  completedAt: string | undefined;
}

export type EnvVars = Record<string, string>;
