import { hashToken, newId } from './ids.js';
import type { SimSeed } from './seed.js';

/** Lifecycle of a tenant; `operating` is shown under the configurable `operatingStatus` name. */
export type SubaccountStatus = 'operating' | 'suspended' | 'closed';

export interface ParentRecord {
  id: string;
  paidBalance: bigint;
  promoBalance: bigint;
  activeKeyLimit: number;
}

export interface SubaccountRecord {
  seq: number;
  id: string;
  parentId: string;
  name: string;
  /** null: made without one (by a console or script of the parent's past); not shown on the wire. */
  externalRef: string | null;
  status: SubaccountStatus;
  balance: bigint;
  createdAt: number;
  updatedAt: number;
}

export interface ApiKeyRecord {
  seq: number;
  id: string;
  kind: 'tenant' | 'platform';
  parentId: string;
  subaccountId: string | null;
  name: string;
  tokenHash: string;
  status: 'active' | 'revoked';
  createdAt: number;
  revokedAt: number | null;
  lastUsedAt: number | null;
  /** Authenticated requests made with the key (shown as a use counter by some shapes). */
  useCount: number;
}

export interface PersonalTokenRecord {
  parentId: string;
  tokenHash: string;
  lastUsedAt: number | null;
}

export interface TransferRecord {
  seq: number;
  id: string;
  parentId: string;
  subaccountId: string;
  amount: bigint;
  idempotencyKey: string;
  createdAt: number;
}

export interface EnvVar {
  key: string;
  value: string;
}

export interface ProjectRecord {
  seq: number;
  id: string;
  parentId: string;
  /** `null` for a parent's own project. */
  subaccountId: string | null;
  name: string;
  region: string;
  status: 'active' | 'deleted';
  createdAt: number;
  deletedAt: number | null;
  envVars: EnvVar[];
}

export interface DeliveryRecord {
  seq: number;
  id: string;
  webhookId: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  responseCode: number | null;
  responseBody: string | null;
  error: string | null;
  createdAt: number;
  completedAt: number | null;
}

export interface WebhookRecord {
  seq: number;
  id: string;
  projectId: string;
  label: string;
  url: string;
  secret: string | null;
  events: string[];
  createdAt: number;
  updatedAt: number;
  /** Oldest first; trimmed to the seed's deliveryHistoryLimit. */
  deliveries: DeliveryRecord[];
}

/** All platform data, in memory. Every mutation reads and writes it with no `await` in between. */
export interface SimState {
  parents: Map<string, ParentRecord>;
  subaccounts: Map<string, SubaccountRecord>;
  apiKeys: Map<string, ApiKeyRecord>;
  apiKeysByHash: Map<string, ApiKeyRecord>;
  /** Each owner's keys (the parent's own, or a sub-account's), oldest first: a listing is O(its keys), not O(all). */
  apiKeysByOwner: Map<string, ApiKeyRecord[]>;
  personalTokensByHash: Map<string, PersonalTokenRecord>;
  transfers: TransferRecord[];
  projects: Map<string, ProjectRecord>;
  webhooks: Map<string, WebhookRecord>;
  nextSeq: number;
}

export function nextSeq(state: SimState): number {
  state.nextSeq += 1;
  return state.nextSeq;
}

export function createState(seed: SimSeed, now: number): SimState {
  const state: SimState = {
    parents: new Map(),
    subaccounts: new Map(),
    apiKeys: new Map(),
    apiKeysByHash: new Map(),
    apiKeysByOwner: new Map(),
    personalTokensByHash: new Map(),
    transfers: [],
    projects: new Map(),
    webhooks: new Map(),
    nextSeq: 0,
  };
  for (const parent of seed.parents) {
    state.parents.set(parent.id, {
      id: parent.id,
      paidBalance: BigInt(parent.paidBalanceMicroUsd),
      promoBalance: BigInt(parent.promoBalanceMicroUsd),
      activeKeyLimit: parent.activeKeyLimit,
    });
    parent.platformKeys.forEach((token, i) => {
      addApiKey(state, {
        kind: 'platform',
        parentId: parent.id,
        subaccountId: null,
        name: `seed platform key ${i + 1}`,
        tokenHash: hashToken(token),
        createdAt: now,
      });
    });
    for (const token of parent.personalTokens) {
      const tokenHash = hashToken(token);
      state.personalTokensByHash.set(tokenHash, { parentId: parent.id, tokenHash, lastUsedAt: null });
    }
  }
  return state;
}

export function addApiKey(
  state: SimState,
  fields: Pick<ApiKeyRecord, 'kind' | 'parentId' | 'subaccountId' | 'name' | 'tokenHash' | 'createdAt'>,
): ApiKeyRecord {
  const key: ApiKeyRecord = {
    ...fields,
    seq: nextSeq(state),
    id: newId('key_'),
    status: 'active',
    revokedAt: null,
    lastUsedAt: null,
    useCount: 0,
  };
  state.apiKeys.set(key.id, key);
  state.apiKeysByHash.set(key.tokenHash, key);
  const owner = ownerOf(key.parentId, key.subaccountId);
  const owned = state.apiKeysByOwner.get(owner);
  if (owned) owned.push(key);
  else state.apiKeysByOwner.set(owner, [key]);
  return key;
}

/** The keys of the parent (`subaccountId` null) or of one of its sub-accounts, oldest first: the index, read only. */
export function keysOfOwner(state: SimState, parentId: string, subaccountId: string | null): readonly ApiKeyRecord[] {
  return state.apiKeysByOwner.get(ownerOf(parentId, subaccountId)) ?? [];
}

function ownerOf(parentId: string, subaccountId: string | null): string {
  return `${parentId}/${subaccountId ?? ''}`;
}

export function countActiveKeys(state: SimState, parentId: string, subaccountId: string | null): number {
  return keysOfOwner(state, parentId, subaccountId).filter((key) => key.status === 'active').length;
}

export function liveProjectsOf(state: SimState, subaccountId: string): ProjectRecord[] {
  return [...state.projects.values()].filter((p) => p.subaccountId === subaccountId && p.status === 'active');
}
