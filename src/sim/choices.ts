/**
 * The simulator's answers to what the contract leaves "not shown", as switches, so the client can be tested
 * against several reasonable platforms. Defaults are described in CONTRACT-CHOICES.md.
 */
export const ListStyle = {
  /** `{ items: [...], nextCursor: string | null }`, paged with `?limit=&cursor=`. */
  ItemsCursor: 'items-cursor',
  /** A plain JSON array with every item, no paging. */
  Bare: 'bare',
  /** `{ data: [...], page: { nextPageToken: string | null } }`, paged with `?pageSize=&pageToken=`. */
  DataPage: 'data-page',
} as const;
export type ListStyle = (typeof ListStyle)[keyof typeof ListStyle];

export const ReplayStyle = {
  /** A retry with the same key and request gets the original status and payload again. */
  Original: 'original',
  /** A retry with the same key and request gets 409 IDEMPOTENCY_KEY_IN_USE; the client must reconcile. */
  Conflict: 'conflict',
} as const;
export type ReplayStyle = (typeof ReplayStyle)[keyof typeof ReplayStyle];

export interface SimChoices {
  listStyle: ListStyle;
  /** Page size when the client gives none; small so that paging really happens in tests. */
  defaultPageSize: number;
  maxPageSize: number;
  replay: ReplayStyle;
  /** Whether key records carry `lastUsedAt`. */
  showLastUsed: boolean;
  /** Status name of an operating (new or resumed) tenant. */
  operatingStatus: string;
  /** When false (default), close succeeds even with live projects: the orchestrator must check first. */
  closeRefusesWithResources: boolean;
  /** Field name of a key record's identifier. */
  keyIdField: string;
  /** Whether the wallet record lists recent transfers with their idempotency keys (default true). */
  walletShowsTransfers: boolean;
  /** Whether `POST /subaccounts/create` rejects a second live tenant with the same externalRef (default false). */
  uniqueExternalRef: boolean;
  /** Registry delivery: attempts per delivery (first try included). */
  deliveryAttempts: number;
  /** Registry delivery: delay before the 2nd attempt; doubles for each later one. */
  deliveryBaseDelayMs: number;
  /** Registry delivery: receiver time-out per attempt. */
  deliveryTimeoutMs: number;
  /** Whether webhook urls may be plain `http:` for non-loopback hosts (loopback http is always allowed). */
  allowInsecureWebhookUrls: boolean;
  /** Seed for the fault-probability PRNG; `null` uses Math.random. */
  faultRandomSeed: number | null;
}

export const defaultChoices: SimChoices = {
  listStyle: ListStyle.ItemsCursor,
  defaultPageSize: 20,
  maxPageSize: 100,
  replay: ReplayStyle.Original,
  showLastUsed: true,
  operatingStatus: 'active',
  closeRefusesWithResources: false,
  keyIdField: 'id',
  uniqueExternalRef: false,
  walletShowsTransfers: true,
  deliveryAttempts: 4,
  deliveryBaseDelayMs: 500,
  deliveryTimeoutMs: 5000,
  allowInsecureWebhookUrls: false,
  faultRandomSeed: null,
};

export function resolveChoices(overrides: Partial<SimChoices> = {}): SimChoices {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  return { ...defaultChoices, ...defined };
}
