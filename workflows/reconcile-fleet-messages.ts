import { defineQuery, setCurrentDetails } from '@temporalio/workflow';
import type { DriftTotals } from '../src/domain/drift-input.js';

/** What a drift check shows while it runs (query, current details) and returns. No secret: ids only. */
export interface DriftCheckStatus {
  checkId: string | null;
  scope: string;
  phase: 'starting' | 'listing_subaccounts' | 'checking_tenants' | 'finishing' | 'finished';
  after: string | null;
  subaccountsListed: number | null;
  totals: DriftTotals;
  skipped: Array<{ externalRef: string; reason: string }>;
  fixes: Array<{ kind: string; subject: string; fix: string }>;
  openByKind: Record<string, number> | null;
}

export interface ReconcileFleetResult {
  checkId: string;
  scope: string;
  totals: DriftTotals;
  /** Up to 50 skipped tenants with the reason (the count is in totals). */
  skipped: Array<{ externalRef: string; reason: string }>;
  fixes: Array<{ kind: string; subject: string; fix: string }>;
  openByKind: Record<string, number>;
  openTotal: number;
}

export const driftCheckStatusQuery = defineQuery<DriftCheckStatus>('driftCheckStatus');

export function describeDriftCheck(status: DriftCheckStatus): void {
  const t = status.totals;
  const lines = [
    `**${status.phase}** — drift check ${status.checkId ?? '(starting)'} of ` +
      `${status.scope === 'fleet' ? 'the whole fleet' : `tenant \`${status.scope}\``}`,
    `tenants checked: ${t.tenantsChecked}, skipped (workflow running): ${t.skipped}, ` +
      `findings seen: ${t.findingsSeen}, fixes applied: ${t.fixesApplied}`,
  ];
  if (status.subaccountsListed !== null) lines.push(`platform sub-accounts listed: ${status.subaccountsListed}`);
  if (status.after) lines.push(`records checked up to: ${status.after}`);
  if (status.skipped.length)
    lines.push(
      `skipped: ${status.skipped
        .slice(0, 10)
        .map((s) => `${s.externalRef} (${s.reason})`)
        .join('; ')}`,
    );
  if (status.fixes.length)
    lines.push(
      `fixed: ${status.fixes
        .slice(0, 10)
        .map((f) => `${f.kind} ${f.subject} → ${f.fix}`)
        .join('; ')}`,
    );
  if (status.openByKind) {
    const open = Object.entries(status.openByKind).filter(([, n]) => n > 0);
    lines.push(
      open.length
        ? `open findings: ${open.map(([k, n]) => `${k}=${n}`).join(', ')} (\`tenantctl drift list --open\`)`
        : 'open findings: none',
    );
  }
  setCurrentDetails(lines.join('\n\n'));
}
