import type { ResourceAuth } from './auth.js';
import type { CallOptions, PageToken } from './core.js';
import type {
  ApiKeyRecord,
  EnvVars,
  ProjectRecord,
  SubaccountRecord,
  TransferRecord,
  WalletRecord,
  WebhookDeliveryRecord,
  WebhookRecord,
} from './records.js';
import type { SecretToken } from './secret-token.js';
import type { TenantStatus } from './status.js';

// One input object per call, one result per call, every result carrying the platform's request id.

export interface Traced {
  /** `meta.requestId` (or the X-Request-Id header) of the response; the last page's for lists. */
  requestId: string | undefined;
}
export interface TracedList extends Traced {
  requestIds: (string | undefined)[];
}

export type ListSubaccountsInput = CallOptions;
export interface ListSubaccountsPageInput extends CallOptions {
  /** Where to continue (`next` of the previous page); absent: the first page. */
  page?: PageToken | undefined;
}
export interface CreateSubaccountInput extends CallOptions {
  name: string;
  externalRef: string;
  idempotencyKey: string;
}
export interface SubaccountRefInput extends CallOptions {
  subaccountId: string;
}
export interface LifecycleInput extends SubaccountRefInput {
  /** Advised by the contract for lifecycle actions; makes an ambiguous failure safely retryable. */
  idempotencyKey?: string;
}
export interface TransferInput extends SubaccountRefInput {
  /** Positive integer string, micro-USD. */
  amountMicroUsd: string;
  /** Sent both as the Idempotency-Key header and the body's idempotencyKey. */
  idempotencyKey: string;
}
export interface CreateTenantKeyInput extends SubaccountRefInput {
  name: string;
}
export interface RevokeTenantKeyInput extends SubaccountRefInput {
  keyId: string;
}
export type ListPlatformKeysInput = CallOptions;
export interface CreatePlatformKeyInput extends CallOptions {
  name: string;
}
export interface RevokePlatformKeyInput extends CallOptions {
  keyId: string;
}

export interface ResourceInput extends CallOptions {
  auth: ResourceAuth;
}
export interface CreateProjectInput extends ResourceInput {
  name: string;
  region: string;
}
export interface ProjectRefInput extends ResourceInput {
  projectId: string;
}
export interface PutEnvVarsInput extends ProjectRefInput {
  /** The complete set: replaces whatever the project had (never merged). */
  vars: EnvVars;
}

export interface WebhookProjectInput extends CallOptions {
  /** Registry webhook management uses a personal access token; this is the default. */
  auth?: ResourceAuth;
  projectId: string;
}
export interface CreateWebhookInput extends WebhookProjectInput {
  label: string;
  url: string;
  secret?: SecretToken | string;
  events: string[];
}
export interface WebhookRefInput extends WebhookProjectInput {
  webhookId: string;
}
export interface UpdateWebhookInput extends WebhookRefInput {
  label?: string;
  url?: string;
  secret?: SecretToken | string;
  events?: string[];
}

export interface ListSubaccountsResult extends TracedList {
  subaccounts: SubaccountRecord[];
}
export interface SubaccountsPageResult extends Traced {
  subaccounts: SubaccountRecord[];
  /** The next page, `null` at the end of the list. Plain data: safe to keep in an activity heartbeat. */
  next: PageToken | null;
}
export interface SubaccountResult extends Traced {
  subaccount: SubaccountRecord;
}
/** Lifecycle responses are not shown beyond "tenant suspended"; the record is returned when the platform sends it. */
export interface LifecycleResult extends Traced {
  subaccount: SubaccountRecord | undefined;
  status: TenantStatus;
  rawStatus: string | undefined;
}
export interface WalletResult extends Traced {
  wallet: WalletRecord;
}
export interface TransferResult extends Traced {
  transfer: TransferRecord;
}
export interface ListKeysResult extends TracedList {
  keys: ApiKeyRecord[];
}
export interface CreateKeyResult extends Traced {
  key: ApiKeyRecord;
  token: SecretToken;
}
export interface RevokeKeyResult extends Traced {
  /** The revoked record, when the platform returns one. */
  key: ApiKeyRecord | undefined;
}
export interface ListProjectsResult extends TracedList {
  projects: ProjectRecord[];
}
export interface ProjectResult extends Traced {
  project: ProjectRecord;
}
export type DeleteResult = Traced;
export interface EnvVarsResult extends Traced {
  vars: EnvVars;
}
export interface WebhookResult extends Traced {
  webhook: WebhookRecord;
}
export interface ListWebhooksResult extends TracedList {
  webhooks: WebhookRecord[];
}
export interface ListDeliveriesResult extends TracedList {
  deliveries: WebhookDeliveryRecord[];
}

export interface PlatformClient {
  listSubaccounts(input?: ListSubaccountsInput): Promise<ListSubaccountsResult>;
  /** One page of the sub-account list, for scans that must not hold a whole large fleet or stop at a page cap. */
  listSubaccountsPage(input: ListSubaccountsPageInput): Promise<SubaccountsPageResult>;
  createSubaccount(input: CreateSubaccountInput): Promise<SubaccountResult>;
  getSubaccount(input: SubaccountRefInput): Promise<SubaccountResult>;
  suspendSubaccount(input: LifecycleInput): Promise<LifecycleResult>;
  resumeSubaccount(input: LifecycleInput): Promise<LifecycleResult>;
  closeSubaccount(input: LifecycleInput): Promise<LifecycleResult>;
  getWallet(input: SubaccountRefInput): Promise<WalletResult>;
  transfer(input: TransferInput): Promise<TransferResult>;
  listTenantKeys(input: SubaccountRefInput): Promise<ListKeysResult>;
  createTenantKey(input: CreateTenantKeyInput): Promise<CreateKeyResult>;
  revokeTenantKey(input: RevokeTenantKeyInput): Promise<RevokeKeyResult>;
  listPlatformKeys(input?: ListPlatformKeysInput): Promise<ListKeysResult>;
  createPlatformKey(input: CreatePlatformKeyInput): Promise<CreateKeyResult>;
  revokePlatformKey(input: RevokePlatformKeyInput): Promise<RevokeKeyResult>;

  listProjects(input: ResourceInput): Promise<ListProjectsResult>;
  createProject(input: CreateProjectInput): Promise<ProjectResult>;
  getProject(input: ProjectRefInput): Promise<ProjectResult>;
  deleteProject(input: ProjectRefInput): Promise<DeleteResult>;
  getEnvVars(input: ProjectRefInput): Promise<EnvVarsResult>;
  putEnvVars(input: PutEnvVarsInput): Promise<EnvVarsResult>;

  createWebhook(input: CreateWebhookInput): Promise<WebhookResult>;
  listWebhooks(input: WebhookProjectInput): Promise<ListWebhooksResult>;
  updateWebhook(input: UpdateWebhookInput): Promise<WebhookResult>;
  deleteWebhook(input: WebhookRefInput): Promise<DeleteResult>;
  listWebhookDeliveries(input: WebhookRefInput): Promise<ListDeliveriesResult>;
}
