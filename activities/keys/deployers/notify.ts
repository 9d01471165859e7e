import { createHmac } from 'node:crypto';
import type { RotationOptions } from '../rotation-options.js';
import { activityFailure } from '../../failures.js';
import { FailureCode } from '../../../src/domain/failures.js';
import { outboundFailureDetail, type OutboundFetch } from '../../../src/infra/outbound/fetch.js';
import type { Logger } from '../../../src/infra/log.js';

/**
 * The `notify` deployer: the vault stays the source of truth and the parent is told which key is
 * now current, by a POST signed like the platform's own webhooks (HMAC-SHA256 over the exact body,
 * `sha256=<hex>`). The notice holds ids and a fingerprint, never the token: the parent fetches the
 * token through its own audited path (`tenantctl key reveal` or the vault API).
 * Retried until a 2xx answer, by the activity's retry policy; the body is built from stored
 * values only, so every retry sends the same bytes and the same delivery id. The POST goes through
 * the outbound guard (ROTATION_NOTIFY_URL is checked at start too): no inward address unless
 * OUTBOUND_ALLOW_HOSTS lists it, no redirect followed.
 */
export const NotifyEvent = { keyRotated: 'keyRotated', keyRotationAborted: 'keyRotationAborted' } as const;
export type NotifyEvent = (typeof NotifyEvent)[keyof typeof NotifyEvent];

export interface KeyRotatedNotice {
  event: NotifyEvent;
  deliveryId: string;
  rotationId: string;
  externalRef: string;
  subaccountId: string;
  slot: string;
  /** The generation that is current from now on, and its key. */
  generation: number;
  keyId: string;
  fingerprint: string;
  /** The generation it replaces (keyRotated) or that failed (keyRotationAborted). */
  otherGeneration: number;
  otherKeyId: string | null;
  emergency: boolean;
  occurredAt: string;
}

export const SIGNATURE_HEADER = 'X-Tpo-Signature';
export const EVENT_HEADER = 'X-Tpo-Event';
export const DELIVERY_HEADER = 'X-Tpo-Delivery';

export function signNotice(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

export async function sendNotice(
  options: RotationOptions['notify'],
  notice: KeyRotatedNotice,
  via: { outbound: OutboundFetch; logger?: Logger; signal?: AbortSignal | undefined },
): Promise<{ status: number }> {
  const { signal } = via;
  if (!options) {
    throw activityFailure(
      FailureCode.DEPLOYER_NOT_CONFIGURED,
      'the notify deployer needs ROTATION_NOTIFY_URL and ROTATION_NOTIFY_SECRET',
    );
  }
  const body = JSON.stringify(notice);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let response: Awaited<ReturnType<OutboundFetch>>;
  try {
    response = await via.outbound(options.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [EVENT_HEADER]: notice.event,
        [DELIVERY_HEADER]: notice.deliveryId,
        [SIGNATURE_HEADER]: signNotice(body, options.secret),
      },
      body,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (error) {
    // The network detail (refused, closed, timed out, not resolved) goes to the debug log, not the failure.
    via.logger?.debug(
      { deliveryId: notice.deliveryId, detail: outboundFailureDetail(error) },
      'notify endpoint got no answer',
    );
    throw activityFailure(FailureCode.DEPLOY_ENDPOINT_REFUSED, 'the notify endpoint could not be reached', {
      retryable: true,
    });
  }
  await response.body?.cancel().catch(() => undefined);
  if (response.status < 200 || response.status >= 300) {
    throw activityFailure(FailureCode.DEPLOY_ENDPOINT_REFUSED, `the notify endpoint answered ${response.status}`, {
      retryable: true,
      details: { status: response.status },
    });
  }
  return { status: response.status };
}
