import { isoOrNull } from './clock.js';
import type { SimRuntime } from './runtime.js';
import type { TrafficStats } from './traffic.js';
import { deliveryView, statusName, webhookView } from './views.js';

/** What `GET /__sim/state` and `RunningSimulator.state()` return. Money as strings; no tokens, hashes or secrets. */
export interface SimStateSnapshot {
  now: string;
  parents: { id: string; paidBalanceMicroUsd: string; promoBalanceMicroUsd: string; activeKeyLimit: number }[];
  subaccounts: {
    id: string;
    parentId: string;
    name: string;
    /** '' when the tenant carries none. */
    externalRef: string;
    /** The wire status: the configured operatingStatus (default `active`), `suspended` or `closed`. */
    status: string;
    balanceMicroUsd: string;
    createdAt: string;
  }[];
  transfers: {
    id: string;
    parentId: string;
    subaccountId: string;
    amountMicroUsd: string;
    idempotencyKey: string;
    createdAt: string;
  }[];
  apiKeys: {
    id: string;
    kind: 'tenant' | 'platform';
    parentId: string;
    subaccountId: string | null;
    name: string;
    status: 'active' | 'revoked';
    createdAt: string;
    revokedAt: string | null;
    lastUsedAt: string | null;
  }[];
  projects: {
    id: string;
    parentId: string;
    subaccountId: string | null;
    name: string;
    region: string;
    status: 'active' | 'deleted';
    createdAt: string;
    /** Names only: values may hold deployed credentials. */
    envVarKeys: string[];
  }[];
  webhooks: (ReturnType<typeof webhookView> & { deliveries: ReturnType<typeof deliveryView>[] })[];
  stats: TrafficStats;
}

export function snapshotOf(sim: SimRuntime): SimStateSnapshot {
  const { state, choices } = sim;
  const iso = (ms: number): string => isoOrNull(ms) ?? '';
  return {
    now: sim.clock.iso(),
    parents: [...state.parents.values()].map((p) => ({
      id: p.id,
      paidBalanceMicroUsd: p.paidBalance.toString(),
      promoBalanceMicroUsd: p.promoBalance.toString(),
      activeKeyLimit: p.activeKeyLimit,
    })),
    subaccounts: [...state.subaccounts.values()].map((s) => ({
      id: s.id,
      parentId: s.parentId,
      name: s.name,
      externalRef: s.externalRef ?? '',
      status: statusName(s, choices),
      balanceMicroUsd: s.balance.toString(),
      createdAt: iso(s.createdAt),
    })),
    transfers: state.transfers.map((t) => ({
      id: t.id,
      parentId: t.parentId,
      subaccountId: t.subaccountId,
      amountMicroUsd: t.amount.toString(),
      idempotencyKey: t.idempotencyKey,
      createdAt: iso(t.createdAt),
    })),
    apiKeys: [...state.apiKeys.values()].map((k) => ({
      id: k.id,
      kind: k.kind,
      parentId: k.parentId,
      subaccountId: k.subaccountId,
      name: k.name,
      status: k.status,
      createdAt: iso(k.createdAt),
      revokedAt: isoOrNull(k.revokedAt),
      lastUsedAt: isoOrNull(k.lastUsedAt),
    })),
    projects: [...state.projects.values()].map((p) => ({
      id: p.id,
      parentId: p.parentId,
      subaccountId: p.subaccountId,
      name: p.name,
      region: p.region,
      status: p.status,
      createdAt: iso(p.createdAt),
      envVarKeys: p.envVars.map((v) => v.key),
    })),
    webhooks: [...state.webhooks.values()].map((w) => ({
      ...webhookView(w),
      deliveries: w.deliveries.map((d) => deliveryView(d)),
    })),
    stats: sim.traffic.snapshot(),
  };
}
