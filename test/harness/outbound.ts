import { createOutboundFetch } from '../../src/infra/outbound/fetch.js';
import { parseAllowHosts } from '../../src/domain/outbound-rule.js';

/**
 * The tests' receivers listen on loopback at ports picked when they start, after the worker: the
 * harness allows loopback hosts on any port (OUTBOUND_ALLOW_HOSTS), as an operator would list one
 * receiver. Tests of the guard itself build their own, stricter, allow-lists.
 */
export const TEST_OUTBOUND_ALLOW_HOSTS = '127.0.0.1,localhost,[::1]';
export const testAllowHosts = parseAllowHosts(TEST_OUTBOUND_ALLOW_HOSTS).hosts;
export const testOutbound = createOutboundFetch({ allowHosts: testAllowHosts });
