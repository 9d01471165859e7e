/**
 * An admin's close sooner than the minimum (CLOSE_DELAY, or a plan's longer closeDelay), vouched for by the server
 * to the run. closeTenant holds every start to the minimum, because a start in the Web UI or straight through a
 * Temporal client names no caller; the one exception, an admin's `close.immediate` through the gateway, reaches
 * the run as this grant: the close's workflow id, its delay and when it was given, sealed with the server's
 * master key (AES-256-GCM, the workflow id as additional data). Whoever lacks SECRETS_KEYS cannot make one, and
 * one copied from another run's history opens for that tenant's close only, and only within GRANT_TTL_MS of its
 * making. Nothing in it is secret; it is sealed to be authentic.
 */
import type { Vault } from './vault.js';

export interface CloseSoonerGrant {
  /** `close:<externalRef>`. */
  workflowId: string;
  /** The delay the admin chose (`0`: at once). */
  after: string;
  /** Who chose it (the authenticated name). */
  by: string;
  issuedAtMs: number;
}

/** How long after its making a grant still opens a close: a start goes to Temporal at once. */
export const GRANT_TTL_MS = 10 * 60_000;
/** Clocks of the gateway and the Temporal server may differ this much. */
const CLOCK_SKEW_MS = 60_000;

const aadOf = (workflowId: string) => JSON.stringify(['close-sooner-grant', workflowId]);

export function sealCloseSoonerGrant(vault: Vault, grant: CloseSoonerGrant): string {
  return vault.seal(JSON.stringify(grant), aadOf(grant.workflowId));
}

/**
 * The grant when it opens for `workflowId` and was made shortly before the run started (`startedAtMs`), else
 * null (not one this server made for this close, or too old).
 */
export function openCloseSoonerGrant(
  vault: Vault,
  sealed: string,
  workflowId: string,
  startedAtMs: number,
): CloseSoonerGrant | null {
  let grant: CloseSoonerGrant;
  try {
    grant = JSON.parse(vault.open(sealed, aadOf(workflowId))) as CloseSoonerGrant;
  } catch {
    return null;
  }
  if (grant.workflowId !== workflowId || typeof grant.after !== 'string') return null;
  const age = startedAtMs - grant.issuedAtMs;
  return age <= GRANT_TTL_MS && age >= -CLOCK_SKEW_MS ? grant : null;
}
