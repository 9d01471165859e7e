import { z } from 'zod';

/**
 * The registry delivery body (contract, "Events"). Fields beyond these are ignored (the contract adds
 * fields over time), and event names are open: `*` subscribers get events added later, so an unknown
 * name is accepted and recorded, never refused.
 */
const KNOWN_REGISTRY_EVENTS = [
  'image.pushed',
  'image.deleted',
  'image.moved',
  'image.copied',
  'image.scan.completed',
] as const;
export type KnownRegistryEvent = (typeof KNOWN_REGISTRY_EVENTS)[number];

export function isKnownRegistryEvent(event: string): event is KnownRegistryEvent {
  return (KNOWN_REGISTRY_EVENTS as readonly string[]).includes(event);
}

export const registryDeliverySchema = z.object({
  event: z.string().min(1).max(200),
  deliveryId: z.string().min(1).max(200),
  webhookId: z.string().min(1).max(200),
  payload: z.record(z.string(), z.unknown()).optional(),
  /** ISO 8601 UTC (contract); checked against the receiver's clock (GATEWAY_WEBHOOK_TOLERANCE_SECONDS). */
  timestamp: z.string().max(100),
});
export type RegistryDelivery = z.infer<typeof registryDeliverySchema>;
