/**
 * What the platform's INSUFFICIENT_BALANCE tells us about the parent's own paid balance (the contract
 * shows no endpoint to read it): it could not cover the smallest amount it refused since the record
 * was set. So one oversized transfer holds back only transfers at least as large, never the whole
 * fleet (issue 31). The record clears when `tenantctl parent-funded` says so, or when a transfer at
 * least as large as the recorded amount, sent after the record was set, succeeds (the balance covered it).
 */
export interface ParentShortfall {
  /** When the platform first refused (null: no record). */
  since: Date | string | null;
  /** The smallest amount refused since then; null with `since` set: not known, every amount is held. */
  refusedMicroUsd: string | null;
}

/** A transfer of `amountMicroUsd` would meet the same refusal: the record says the parent cannot cover it. */
export function shortfallHolds(record: ParentShortfall, amountMicroUsd: string): boolean {
  if (!record.since) return false;
  if (record.refusedMicroUsd === null) return true;
  return BigInt(amountMicroUsd) >= BigInt(record.refusedMicroUsd);
}

/** Why a transfer of `amountMicroUsd` is held, naming the refused amount and the way out. */
export function shortfallDetail(record: ParentShortfall, amountMicroUsd: string): string {
  const at = record.since ? new Date(record.since).toISOString() : 'an unknown time';
  const refused =
    record.refusedMicroUsd === null
      ? `a transfer for INSUFFICIENT_BALANCE at ${at} (its amount is not recorded: every amount waits)`
      : `a transfer of ${record.refusedMicroUsd} micro-USD for INSUFFICIENT_BALANCE at ${at} ` +
        `(${amountMicroUsd} micro-USD is not less)`;
  return `the platform refused ${refused}: fund the parent, then \`tenantctl parent-funded --reason "..."\``;
}
