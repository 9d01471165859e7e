import { createHmac } from 'node:crypto';
import type { SimChoices } from './choices.js';
import type { SimClock } from './clock.js';
import { newId } from './ids.js';
import { nextSeq, type DeliveryRecord, type SimState, type WebhookRecord } from './state.js';

export const REGISTRY_EVENTS = [
  'image.pushed',
  'image.deleted',
  'image.moved',
  'image.copied',
  'image.scan.completed',
] as const;
export type RegistryEvent = (typeof REGISTRY_EVENTS)[number];

const MAX_STORED_RESPONSE_BODY = 1024;

export interface RegistryEventInput {
  projectId: string;
  event: RegistryEvent;
  image: string;
  tag: string;
}

export function signBody(secret: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody, 'utf8').digest('hex')}`;
}

/**
 * Outbound registry webhook delivery. Each delivery's body is serialized once and signed over those exact bytes;
 * retries resend the same bytes (same deliveryId and timestamp). Success is any 2xx; anything else, a network
 * error or a time-out is retried with exponential backoff until the attempts run out.
 */
export class RegistryDelivery {
  #abort = new AbortController();
  readonly #inFlight = new Set<Promise<void>>();

  constructor(
    private readonly clock: SimClock,
    private readonly choices: SimChoices,
    private readonly historyLimit: number,
  ) {}

  /** Creates one delivery per subscribed webhook of the project and starts sending in the background. */
  emit(state: SimState, input: RegistryEventInput): DeliveryRecord[] {
    const webhooks = [...state.webhooks.values()].filter(
      (w) => w.projectId === input.projectId && (w.events.includes('*') || w.events.includes(input.event)),
    );
    return webhooks.map((webhook) => this.#start(webhook, input, nextSeq(state)));
  }

  /** Stops every pending delivery (used by reset and close). */
  cancelAll(): void {
    this.#abort.abort();
    this.#abort = new AbortController();
  }

  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #start(webhook: WebhookRecord, input: RegistryEventInput, seq: number): DeliveryRecord {
    const now = this.clock.now();
    const delivery: DeliveryRecord = {
      seq,
      id: newId('dlv_'),
      webhookId: webhook.id,
      event: input.event,
      status: 'pending',
      attempts: 0,
      responseCode: null,
      responseBody: null,
      error: null,
      createdAt: now,
      completedAt: null,
    };
    webhook.deliveries.push(delivery);
    if (webhook.deliveries.length > this.historyLimit) {
      webhook.deliveries.splice(0, webhook.deliveries.length - this.historyLimit);
    }
    const body = JSON.stringify({
      event: input.event,
      deliveryId: delivery.id,
      webhookId: webhook.id,
      payload: { image: input.image, tag: input.tag },
      timestamp: new Date(now).toISOString(),
    });
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      'X-Service-Event': input.event,
      'X-Service-Delivery': delivery.id,
    };
    // No secret, no signature header: an empty-key HMAC would only give false assurance.
    if (webhook.secret !== null) headers['X-Service-Signature'] = signBody(webhook.secret, body);

    const run = this.#deliver(webhook.url, headers, body, delivery, this.#abort.signal);
    this.#inFlight.add(run);
    void run.finally(() => this.#inFlight.delete(run));
    return delivery;
  }

  async #deliver(
    url: string,
    headers: Record<string, string>,
    body: string,
    delivery: DeliveryRecord,
    cancel: AbortSignal,
  ): Promise<void> {
    for (let attempt = 1; attempt <= this.choices.deliveryAttempts; attempt += 1) {
      if (cancel.aborted) return;
      delivery.attempts = attempt;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body,
          redirect: 'manual',
          signal: AbortSignal.any([cancel, AbortSignal.timeout(this.choices.deliveryTimeoutMs)]),
        });
        const text = await response.text();
        delivery.responseCode = response.status;
        delivery.responseBody = text.slice(0, MAX_STORED_RESPONSE_BODY);
        delivery.error = response.ok ? null : `Receiver answered HTTP ${response.status}.`;
        if (response.ok) {
          delivery.status = 'succeeded';
          delivery.completedAt = this.clock.now();
          return;
        }
      } catch (cause) {
        if (cancel.aborted) return;
        delivery.responseCode = null;
        delivery.responseBody = null;
        delivery.error = describeNetworkError(cause);
      }
      if (attempt < this.choices.deliveryAttempts) {
        await sleep(this.choices.deliveryBaseDelayMs * 2 ** (attempt - 1), cancel);
      }
    }
    if (cancel.aborted) return;
    delivery.status = 'failed';
    delivery.completedAt = this.clock.now();
  }
}

function describeNetworkError(cause: unknown): string {
  const error = cause as Error & { cause?: { code?: string; message?: string } };
  if (error.name === 'TimeoutError') return 'Receiver timed out.';
  const detail = error.cause?.code ?? error.cause?.message ?? error.message;
  return `Network error: ${detail}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
