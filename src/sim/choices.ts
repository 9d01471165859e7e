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

/** Where a key record shows its last use (when `showLastUsed`). */
export const LastUseField = {
  /** `lastUsedAt: string | null` at the top level. */
  Top: 'top',
  /** `usage: { lastUsedAt, requestCount }`. */
  Usage: 'usage',
  /** `lastUsed: { at, ip }` (`lastUsed: null` when never used). */
  LastUsedObject: 'lastUsed.at',
} as const;
export type LastUseField = (typeof LastUseField)[keyof typeof LastUseField];

export interface SimChoices {
  listStyle: ListStyle;
  /** Page size when the client gives none; small so that paging really happens in tests. */
  defaultPageSize: number;
  maxPageSize: number;
  /** Pages are always `defaultPageSize` long, whatever `limit` the client asks for (a bad limit is still refused). */
  ignoreLimit: boolean;
  replay: ReplayStyle;
  /** Refused requests (4xx) are recorded under their idempotency key too and replayed like successes. */
  recordRefusals: boolean;
  /** Status of the answer to the same idempotency key with a different request (409 or 422). */
  keyReuseStatus: 409 | 422;
  /** Status of a successful create (201, or 200 on platforms that answer every success 200). */
  createStatus: 200 | 201;
  /** Whether key records carry last-use information. */
  showLastUsed: boolean;
  lastUseField: LastUseField;
  /** Field name of a key record's status word (`status` or `state`). */
  keyStatusField: 'status' | 'state';
  /**
   * Records carry extra fields a client must ignore: nested `metadata`, a `tokenHint`, timestamps of their own life.
   */
  extraFields: boolean;
  /**
   * Field names on the wire: `camel` (`lastUsedAt`) or `snake` (`last_used_at`, `next_cursor`, …). `meta` stays as the
   * contract names it.
   */
  fieldCase: 'camel' | 'snake';
  /**
   * Delivery records: `flat` (`status`, `responseCode`, `error`) or `outcome` (`outcome`, `lastResponse: { status, body
   * }`, `lastError`).
   */
  deliveryShape: 'flat' | 'outcome';
  /**
   * A personal token with `X-Service-Subaccount`: `accept` acts in that tenant; `refuse` answers 403
   * SUBACCOUNT_SCOPE (a personal token carries no tenant context). Either way a personal token reaches every project
   * of its parent, its tenants' included, by project id.
   */
  personalSubaccountHeader: 'accept' | 'refuse';
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
  ignoreLimit: false,
  replay: ReplayStyle.Original,
  recordRefusals: false,
  keyReuseStatus: 409,
  createStatus: 201,
  showLastUsed: true,
  lastUseField: LastUseField.Top,
  keyStatusField: 'status',
  extraFields: false,
  fieldCase: 'camel',
  deliveryShape: 'flat',
  personalSubaccountHeader: 'accept',
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

/**
 * Named platform shapes, so a test can run against several reasonable platforms (`describe.each(SHAPE_NAMES)`).
 * - `default`: the simulator's own answers (CONTRACT-CHOICES.md).
 * - `alt`: the independent implementation of issue 15: wrapped lists two to a page with cursors, ignoring `limit`;
 *   tenants `enabled`; key records `{ id, name, state, tokenHint, usage: { lastUsedAt, requestCount }, … }` with
 *   extra nested fields; 409 replays, refused requests recorded; 422 on key reuse; close refused while projects
 *   remain; delivery records `{ outcome, lastResponse: { status } }`; personal token + X-Service-Subaccount refused.
 * - `snake`: snake_case field names everywhere (`last_used_at`, `external_ref`, `next_cursor`), last use under
 *   `last_used: { at }`, three to a page.
 */
export const SIM_SHAPES = {
  default: {},
  alt: {
    listStyle: ListStyle.ItemsCursor,
    defaultPageSize: 2,
    ignoreLimit: true,
    operatingStatus: 'enabled',
    createStatus: 201,
    replay: ReplayStyle.Conflict,
    recordRefusals: true,
    keyReuseStatus: 422,
    lastUseField: LastUseField.Usage,
    keyStatusField: 'state',
    extraFields: true,
    closeRefusesWithResources: true,
    deliveryShape: 'outcome',
    personalSubaccountHeader: 'refuse',
  },
  snake: {
    fieldCase: 'snake',
    lastUseField: LastUseField.LastUsedObject,
    defaultPageSize: 3,
    createStatus: 200,
  },
} as const satisfies Record<string, Partial<SimChoices>>;
export type ShapeName = keyof typeof SIM_SHAPES;
export const SHAPE_NAMES = Object.keys(SIM_SHAPES) as ShapeName[];
