import { seededRandom } from '../src/sim/faults.js';

/** What the run asks of one tenant, drawn from the seed so a failing run can be repeated. */
export interface TenantPlan {
  index: number;
  externalRef: string;
  name: string;
  fundingMicroUsd: string;
  /** Rotations of slot `default`, one after the other; `true` = emergency (no quiet period). */
  rotations: boolean[];
  /**
   * `after-rotations`: closed once its rotations are done (or right after onboarding);
   * `racing-rotation`: closed while its first rotation is still running (the close cancels it).
   */
  close: 'none' | 'after-rotations' | 'racing-rotation';
  /** Top-ups after onboarding (before any rotation), in micro-USD, each under its own idempotency key. */
  topUps: string[];
  /** Suspended once its rotations are done (only a tenant that is not closed). */
  suspend: boolean;
}

export interface Plan {
  runId: string;
  tenants: TenantPlan[];
  /** Operations the driver will start: onboardings + top-ups + rotations + suspends + closes. */
  totalOperations: number;
}

export function makePlan(
  options: {
    tenants: number;
    seed: number;
    rotateShare: number;
    closeShare: number;
    /** Shares of tenants topped up (once or twice) and suspended; 0 unless the run asks (the restore drill). */
    topUpShare?: number;
    suspendShare?: number;
    exactCounts?: { rotations: number; closes: number } | undefined;
  },
  runId: string,
): Plan {
  const random = seededRandom(options.seed);
  const tenants: TenantPlan[] = [];
  for (let index = 0; index < options.tenants; index++) {
    const rotates = random() < options.rotateShare;
    const rotations = rotates ? [random() < 0.5, ...(random() < 0.15 ? [random() < 0.5] : [])] : [];
    const closes = random() < options.closeShare;
    const close = !closes ? 'none' : rotations.length > 0 && random() < 0.5 ? 'racing-rotation' : 'after-rotations';
    tenants.push({
      index,
      externalRef: `chaos-${runId}-${String(index).padStart(4, '0')}`,
      name: `Chaos Tenant ${index}`,
      // 0.01 to 2 USD: 500 tenants stay well inside the seeded parent balance.
      fundingMicroUsd: String(10_000 + Math.floor(random() * 1_990_000)),
      rotations: close === 'racing-rotation' ? rotations.slice(0, 1) : rotations,
      close,
      topUps: [],
      suspend: false,
    });
  }
  if (options.exactCounts) applyExactCounts(tenants, options.exactCounts, random);
  // Drawn from a random stream of their own, so a run without them plans exactly what it did before.
  const extra = seededRandom(options.seed + 7);
  for (const tenant of tenants) {
    if (extra() < (options.topUpShare ?? 0))
      tenant.topUps = Array.from({ length: extra() < 0.3 ? 2 : 1 }, () =>
        String(5_000 + Math.floor(extra() * 500_000)),
      );
    tenant.suspend = tenant.close === 'none' && extra() < (options.suspendShare ?? 0);
  }
  const totalOperations = tenants.reduce(
    (sum, t) => sum + 1 + t.topUps.length + t.rotations.length + (t.suspend ? 1 : 0) + (t.close === 'none' ? 0 : 1),
    0,
  );
  return { runId, tenants, totalOperations };
}

/**
 * Exactly `rotations` rotations (one each, on distinct tenants) and `closes` closes: up to a third
 * of the closes race a rotation, the others close tenants that did not rotate.
 */
function applyExactCounts(
  tenants: TenantPlan[],
  counts: { rotations: number; closes: number },
  random: () => number,
): void {
  if (counts.rotations > tenants.length || counts.closes > tenants.length)
    throw new Error(`exactCounts: at most ${tenants.length} rotations and closes with ${tenants.length} tenants`);
  const order = tenants.map((t) => t.index);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (const tenant of tenants) {
    tenant.rotations = [];
    tenant.close = 'none';
  }
  const rotating = order.slice(0, counts.rotations);
  for (const index of rotating) tenants[index]!.rotations = [random() < 0.5];
  const racing = Math.min(Math.floor(counts.closes / 3), rotating.length);
  for (const index of rotating.slice(0, racing)) tenants[index]!.close = 'racing-rotation';
  const rest = order.slice(counts.rotations).slice(0, counts.closes - racing);
  if (rest.length < counts.closes - racing) throw new Error('exactCounts: not enough tenants left to close');
  for (const index of rest) tenants[index]!.close = 'after-rotations';
}
