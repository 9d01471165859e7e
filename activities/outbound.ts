import { createOutboundFetch, type OutboundFetch } from '../src/infra/outbound/fetch.js';

let fallback: OutboundFetch | undefined;

/**
 * The outbound POST of activities built without `deps.outbound` (tools and tests that do not say):
 * the same guard with an empty allow-list, so nothing inward is reachable by default. One per process.
 */
export function defaultOutbound(): OutboundFetch {
  fallback ??= createOutboundFetch({ allowHosts: [] });
  return fallback;
}
