import { z } from 'zod';
import { externalRefSchema } from './tenant-input.js';
import { freeText, pathSegmentId } from './text.js';

/**
 * Registry webhook registrations (`tenantctl webhooks create|update`): the project id becomes a platform URL path
 * segment and the label is shown on the platform and stored (1-200 characters in Postgres). Checked before the
 * registration row is written, so a refused value leaves nothing behind.
 */
const label = freeText({ max: 200 });
const events = z.array(freeText({ max: 200 })).min(1, 'must name at least one event, or * for all');

export const createWebhookInputSchema = z.strictObject({
  externalRef: externalRefSchema.optional(),
  projectId: pathSegmentId(200),
  label,
  events,
});

export const updateWebhookInputSchema = z.strictObject({
  registrationId: z.string().regex(/^whr_[A-Za-z0-9]{8,64}$/, 'must be a registration id (whr_...)'),
  label: label.optional(),
  events: events.optional(),
});
