import { appendAudit } from '../src/db/audit-store.js';
import { withTransaction } from '../src/db/pool.js';
import { findRegistration } from '../src/db/webhook-registrations-store.js';
import { getDelivery, markDeliveryProcessed } from '../src/db/webhook-inbox-store.js';
import { isKnownRegistryEvent } from '../src/domain/delivery-body.js';
import { auditOrigin, type ActivityDeps } from './context.js';
import { boundary } from './failures.js';

export interface ProcessRegistryDeliveryInput {
  deliveryId: string;
}

export interface ProcessRegistryDeliveryResult {
  deliveryId: string;
  event: string;
  /** `image`: a known registry event, recorded for its tenant; `unknown`: a newer event name, recorded as such. */
  route: 'image' | 'unknown';
  externalRef: string | null;
  /** False when an earlier attempt already processed it (the effect happened once). */
  processedNow: boolean;
}

export function createRegistryActivities(deps: Pick<ActivityDeps, 'pool' | 'logger'>) {
  const { pool, logger } = deps;
  return {
    /**
     * Routes one verified delivery from the inbox. Marking it processed and writing its audit entry
     * happen in one transaction, guarded by the inbox state: a retried activity or a second workflow
     * for the same delivery cannot record it twice.
     */
    processRegistryDelivery: boundary(
      async (input: ProcessRegistryDeliveryInput): Promise<ProcessRegistryDeliveryResult> => {
        return withTransaction(pool, async (tx) => {
          const delivery = await getDelivery(tx, input.deliveryId);
          const registration = await findRegistration(tx, delivery.registrationId);
          const externalRef = registration?.externalRef ?? null;
          const route = delivery.knownEvent && isKnownRegistryEvent(delivery.event) ? 'image' : 'unknown';
          const payload = (delivery.body['payload'] ?? {}) as Record<string, unknown>;
          const subject =
            typeof payload['image'] === 'string'
              ? `${payload['image']}${typeof payload['tag'] === 'string' ? `:${payload['tag']}` : ''}`
              : null;
          const processedNow = await markDeliveryProcessed(tx, delivery.deliveryId, { route, externalRef });
          if (processedNow) {
            await appendAudit(tx, {
              ...auditOrigin(),
              action: route === 'image' ? `registry.${delivery.event}` : 'registry.unknown_event',
              externalRef,
              subject,
              details: {
                deliveryId: delivery.deliveryId,
                event: delivery.event,
                webhookId: delivery.webhookId,
                projectId: registration?.projectId ?? null,
                payload,
              },
            });
          } else {
            logger.debug({ deliveryId: delivery.deliveryId }, 'registry delivery already processed');
          }
          return { deliveryId: delivery.deliveryId, event: delivery.event, route, externalRef, processedNow };
        });
      },
    ),
  };
}
