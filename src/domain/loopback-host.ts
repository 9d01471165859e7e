/**
 * Loopback hosts told apart without the address classifier (outbound-addresses.ts, whose ipaddr.js costs a CLI
 * start about 4.6 ms to load): a name that is loopback by definition, and the two forms in which the WHATWG URL
 * parser writes every loopback literal it reads as one — IPv4 in dotted decimal within 127.0.0.0/8 (2130706433, 0x7f.1
 * and 127.1 all come out as 127.x.y.z) and IPv6 `[::1]`. Anything else (an IPv4-mapped or other embedding, a zone) is
 * for outbound-rule.ts's hostClassOf to judge; test/unit/loopback-host.test.ts holds this to it.
 */

/** Names that are loopback by definition (RFC 6761), whatever a resolver says. */
export function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** An octet as the URL parser writes it: 0-255, no leading zero. */
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4_LOOPBACK = new RegExp(`^127\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);

/** The hostname without brackets, in lower case, without a trailing dot (`localhost.` is `localhost`). */
export function bareHost(hostname: string): string {
  const unbracketed = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return unbracketed.toLowerCase().replace(/\.$/, '');
}

/**
 * True for a URL hostname (as `new URL(...).hostname` gives it) that is surely loopback; false means "ask
 * hostClassOf", not "not loopback".
 */
export function isPlainLoopbackHost(hostname: string): boolean {
  const host = bareHost(hostname);
  return isLoopbackName(host) || host === '::1' || IPV4_LOOPBACK.test(host);
}
