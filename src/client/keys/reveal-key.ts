import { appendAudit } from '../../db/audit-store.js';
import { findApprovedReveal, setApprovalState } from '../../db/approvals-store.js';
import { requestApproval } from '../approvals/approvals.js';
import { findKeySecret } from '../../db/key-secrets-store.js';
import { withTransaction, type Pool } from '../../db/pool.js';
import { checkDecisionBy } from '../../domain/operator-decisions.js';
import { InvalidInputError } from '../../domain/tenant-input.js';
import { namedSlotSchema, SLOT_RULE } from '../../domain/key-slot-input.js';
import { findActiveKey } from '../../db/tenant-keys-store.js';
import { getTenant } from '../../db/tenants-store.js';
import { tenantTokenAad, type Vault } from '../../secrets/vault.js';

export class NoActiveKeyError extends Error {
  override name = 'NoActiveKeyError';
}

/**
 * The one way to read a token back. Who reads it and why are required (the operator-decision rules:
 * trimmed, non-empty, bounded), checked before anything is read. The audit row is written in the
 * same transaction that reads the sealed value: there is no reveal without its record.
 */
export async function revealKey(
  deps: { pool: Pool; vault: Vault },
  input: {
    externalRef: string;
    slot: string;
    operator: string;
    reason: string;
    /** Four-eyes: the approved request this reveal uses up (in the same transaction). */
    approvalId?: string;
  },
): Promise<{ keyId: string; fingerprint: string; token: string }> {
  const by = checkDecisionBy({ operator: input.operator, reason: input.reason });
  const slot = namedSlotSchema.safeParse(input.slot);
  const problems = [...(by.ok ? [] : by.problems), ...(slot.success ? [] : [`slot: must be ${SLOT_RULE}`])];
  if (!by.ok || problems.length) throw new InvalidInputError(problems);
  const { operator, reason } = by.value;
  return withTransaction(deps.pool, async (tx) => {
    await getTenant(tx, input.externalRef);
    const key = await findActiveKey(tx, input.externalRef, input.slot);
    const secret = key?.platformKeyId ? await findKeySecret(tx, key.id) : undefined;
    if (!key?.platformKeyId || !secret)
      throw new NoActiveKeyError(`tenant ${input.externalRef} has no active key in slot ${input.slot}`);
    const token = deps.vault.open(
      secret.sealed,
      tenantTokenAad({ externalRef: input.externalRef, keyId: key.platformKeyId }),
    );
    if (input.approvalId && !(await setApprovalState(tx, input.approvalId, 'approved', 'executed')))
      throw new Error(`approval request ${input.approvalId} is no longer approved and unused`);
    await appendAudit(tx, {
      actor: `operator:${operator}`,
      action: 'key.revealed',
      externalRef: input.externalRef,
      subject: key.platformKeyId,
      details: {
        slot: input.slot,
        fingerprint: key.fingerprint,
        reason,
        ...(input.approvalId ? { approval: input.approvalId } : {}),
      },
    });
    return { keyId: key.platformKeyId, fingerprint: key.fingerprint ?? '', token };
  });
}

export type RevealAnswer =
  | { status: 'awaiting_approval'; approvalId: string; expiresAt: string }
  | { status: 'revealed'; keyId: string; fingerprint: string; token: string };

/**
 * A reveal under the server's policy: when `keyReveal` is gated (APPROVAL_POLICY), an approved
 * request of this operator for this tenant and slot is used up, and without one a request is
 * written and nothing is read. The caller is the authenticated operator; the policy is the
 * server's own configuration, never the caller's.
 */
export async function revealOrRequest(
  deps: { pool: Pool; vault: Vault },
  input: { externalRef: string; slot: string; operator: string; reason: string },
  policy: { gated: boolean; ttlMs: number },
): Promise<RevealAnswer> {
  let approvalId: string | undefined;
  if (policy.gated) {
    const by = checkDecisionBy({ operator: input.operator, reason: input.reason });
    if (!by.ok) throw new InvalidInputError(by.problems);
    const approved = await findApprovedReveal(deps.pool, {
      externalRef: input.externalRef,
      slot: input.slot,
      requestedBy: input.operator,
    });
    if (!approved) {
      const request = await requestApproval(deps.pool, {
        action: 'keyReveal',
        externalRef: input.externalRef,
        params: { slot: input.slot },
        by: { operator: input.operator, reason: input.reason },
        ttlMs: policy.ttlMs,
      });
      return { status: 'awaiting_approval', approvalId: request.id, expiresAt: request.expiresAt.toISOString() };
    }
    approvalId = approved.id;
  }
  const revealed = await revealKey(deps, { ...input, ...(approvalId ? { approvalId } : {}) });
  return { status: 'revealed', ...revealed };
}
