/**
 * What a caller is told about a failed delivery attempt: the receiver's HTTP status when it answered,
 * otherwise one generic error. A closed port, an open port that is not HTTP, a refused address, a
 * DNS failure, a TLS failure and a timeout all read the same, so deliveries cannot be used to map a
 * network; the detail goes to the worker's debug log only.
 */
export const DELIVERY_NOT_DELIVERED = 'could not deliver';

/** Kept as they are: written by our own code, not by the network. */
const OWN_ERRORS = new Set(['subscription deleted']);

export function answeredError(status: number): string {
  return `receiver answered ${status}`;
}

/** The error of a delivery as shown (older rows recorded network detail: it is not shown). */
export function publicDeliveryError(lastStatus: number | null, lastError: string | null): string | null {
  if (lastError === null) return null;
  if (OWN_ERRORS.has(lastError)) return lastError;
  return lastStatus !== null ? answeredError(lastStatus) : DELIVERY_NOT_DELIVERED;
}
