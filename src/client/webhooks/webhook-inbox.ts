import { appendAudit } from '../../db/audit-store.js';
import type { Queryable } from '../../db/pool.js';
import {
  claimPendingDeliveries,
  countInboxByState,
  insertDeliveryIfAbsent,
  markDeliveryStarted,
  pruneProcessedDeliveries,
  recordStartFailure,
} from '../../db/webhook-inbox-store.js';

/**
 * The registry webhook inbox, as the gateway's receiver, dispatcher, pruner and metrics use it: a verified delivery
 * is recorded once (by delivery id) before it is answered, then started as a run, pruned once processed.
 */
export const recordRegistryDelivery = insertDeliveryIfAbsent;
export const claimInboxDeliveries = claimPendingDeliveries;
export const markInboxDeliveryStarted = markDeliveryStarted;
export const recordInboxStartFailure = recordStartFailure;
export const pruneInbox = pruneProcessedDeliveries;
export const inboxCounts = countInboxByState;

/** A known delivery id with another (validly signed) body: both hashes in the audit log, never the bodies. */
export async function auditDeliveryConflict(
  db: Queryable,
  conflict: { registrationId: string; deliveryId: string; storedBodySha256: string; bodySha256: string },
): Promise<void> {
  await appendAudit(db, {
    actor: 'registry-webhook',
    action: 'registry.delivery_conflict',
    subject: conflict.deliveryId,
    details: {
      deliveryId: conflict.deliveryId,
      registrationId: conflict.registrationId,
      storedBodySha256: conflict.storedBodySha256,
      receivedBodySha256: conflict.bodySha256,
    },
  });
}
